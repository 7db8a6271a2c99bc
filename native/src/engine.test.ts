import { rm } from 'node:fs/promises';
import { buildStepPlan } from '@afd/shared';
import { afterAll, describe, expect, it } from 'vitest';
import { loadAddon } from './addon.js';
import { Engine, nativeEngineOf } from './engine.js';
import { readSpecWeights, referenceLogits, relErr } from './testing/engineReference.js';
import { convertModelDtype as convertDtype, generateGreedy, roleSpec, scatteredBlocks, tinyConfigs, writeTinyModel as writeTiny } from './testing/engineTesting.js';

const opts = { threads: 2, kvBlockSize: 4, numKvBlocks: 31 };
const engines: Engine[] = [];
async function load(...args: Parameters<typeof Engine.load>): Promise<Engine> {
  const e = await Engine.load(...args);
  engines.push(e);
  return e;
}
const dirs: string[] = [];
afterAll(async () => {
  engines.forEach((e) => e.close());
  await Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true })));
});
async function writeTinyModel(arch: string, seed?: number): Promise<string> {
  const dir = await writeTiny(arch, seed);
  dirs.push(dir);
  return dir;
}
async function convertModelDtype(dir: string, dtype: 'f32' | 'f16'): Promise<string> {
  const out = await convertDtype(dir, dtype);
  dirs.push(out);
  return out;
}

function argmax(v: ArrayLike<number>): number {
  let best = 0;
  for (let i = 1; i < v.length; i++) if (v[i]! > v[best]!) best = i;
  return best;
}

describe.each(Object.keys(tinyConfigs))('engine vs float64 reference: %s', (arch) => {
  it('prefill and greedy decode logits match, tokens equal', async () => {
    const dir = await writeTinyModel(arch);
    const spec = await roleSpec(dir, 'colocated');
    const engine = await load(spec, opts);
    const weights = readSpecWeights(spec);
    const prompt = [3, 17, 5, 9, 1, 30, 12];
    const out = await generateGreedy(engine, prompt, 6, { blocks: scatteredBlocks(4, 1, 31) });
    const seq = [...prompt];
    for (let i = 0; i < out.tokens.length; i++) {
      const ref = referenceLogits(spec.config, weights, seq).at(-1)!;
      expect(relErr(out.logits[i]!, ref)).toBeLessThan(1e-5);
      expect(out.tokens[i]).toBe(argmax(ref));
      seq.push(out.tokens[i]!);
    }
  });
});

describe('paged KV cache', () => {
  it('chunked prefill and token-by-token decode equal one whole prefill, with scattered blocks', async () => {
    const dir = await writeTinyModel('qwen3_moe', 7);
    const engine = await load(dir, opts);
    const prompt = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11];
    const whole = await generateGreedy(engine, prompt, 5, { blocks: [0, 1, 2, 3] });
    const chunked = await generateGreedy(engine, prompt, 5, { chunk: 3, blocks: scatteredBlocks(4, 2, 31) });
    const single = await generateGreedy(engine, prompt, 5, { chunk: 1, blocks: scatteredBlocks(4, 3, 31) });
    expect(chunked.tokens).toEqual(whole.tokens);
    expect(single.tokens).toEqual(whole.tokens);
    for (let i = 0; i < whole.logits.length; i++) {
      expect(chunked.logits[i]).toEqual(whole.logits[i]);
      expect(single.logits[i]).toEqual(whole.logits[i]);
    }
  });

  it('a sequence does not depend on its batch mates (mixed prefill + decode batch, two stages)', async () => {
    const dir = await writeTinyModel('qwen3_moe', 8);
    const engine = await load(dir, opts);
    const a = [4, 8, 15, 16, 23, 42 % 64];
    const alone = await engine.step(buildStepPlan([{ tokenIds: a, numCached: 0, blockTable: [5, 6] }], { returnLogits: true }));
    // B: decode after a 5-token prefill; C: chunk of a longer prompt that samples nothing.
    await engine.step(buildStepPlan([{ tokenIds: [9, 9, 9, 9, 9], numCached: 0, blockTable: [10, 11] }]));
    for (const stageSplit of [3, 2, 1]) {
      const plan = buildStepPlan(
        [
          { tokenIds: [7, 7, 7], numCached: 0, blockTable: [20, 21], sample: false },
          { tokenIds: a, numCached: 0, blockTable: [1, 2] },
          { tokenIds: [3], numCached: 5, blockTable: [10, 11] },
        ],
        { returnLogits: true, stageSplit },
      );
      const batched = await engine.step(plan);
      // KV blocks in use this step (block size 4): [20] + [1, 2] + [10, 11], each counted once per step.
      expect(engine.stats().kvBlocksUsed).toBe(5);
      expect(batched.tokenIds[1]).toBe(alone.tokenIds[0]);
      expect(batched.tokenIds[0]).toBe(-1);
      // Sampled rows are A then B; A's logits are identical to the solo run.
      expect(batched.logits!.subarray(0, 64)).toEqual(alone.logits);
    }
  });
});

describe('dtypes', () => {
  it('f32 checkpoints give bitwise the same logits as bf16; f16 weights and bf16 / f16 KV caches stay close', async () => {
    const dir = await writeTinyModel('mixtral', 15);
    const prompt = [1, 4, 9, 16, 25, 36, 49 % 50];
    const run = async (model: string, kvDtype: 'f32' | 'bf16' | 'f16' = 'f32') =>
      generateGreedy(await load(model, { ...opts, kvDtype }), prompt, 3, { blocks: [0, 1, 2] });
    const base = await run(dir);
    const f32 = await run(await convertModelDtype(dir, 'f32'));
    expect(f32.logits).toEqual(base.logits);
    const f16 = await run(await convertModelDtype(dir, 'f16'));
    for (const [i, l] of f16.logits.entries()) expect(relErr(l, base.logits[i]!)).toBeLessThan(1e-5);
    for (const kv of ['bf16', 'f16'] as const) {
      const low = await run(dir, kv);
      for (const [i, l] of low.logits.entries()) expect(relErr(l, base.logits[i]!)).toBeLessThan(2e-2);
    }
  });
});

describe('role split', () => {
  it.each([false, true])('attention engine + ffn engine equals colocated (gate on attention: %s)', async (gateOnAttention) => {
    const dir = await writeTinyModel('qwen3_moe', 9);
    const colocated = await load(dir, opts);
    const attention = await load(dir, { ...opts, role: 'attention', computeGateOnAttention: gateOnAttention });
    const ffn = await load(dir, { ...opts, role: 'ffn', computeGateOnAttention: gateOnAttention });
    expect(attention.info.residentWeightBytes + ffn.info.residentWeightBytes).toBe(colocated.info.residentWeightBytes);
    expect(ffn.info.numKvBlocks).toBe(0);
    attention.attachFfn(ffn);
    const prompt = [5, 6, 7, 8, 9, 10];
    const ref = await generateGreedy(colocated, prompt, 4, { blocks: [0, 1, 2] });
    const split = await generateGreedy(attention, prompt, 4, { blocks: [0, 1, 2] });
    expect(split.tokens).toEqual(ref.tokens);
    for (let i = 0; i < ref.logits.length; i++) expect(split.logits[i]).toEqual(ref.logits[i]);
    expect(ffn.stats().stepsServed).toBe(4);
    expect(ffn.rankStats().ffnLoop?.stepsServed).toBe(4);
    expect(attention.rankStats().kv?.blocksTotal).toBe(31);
    // Each role reports its weights; the colocated and ffn engines hold every expert, attention none.
    const E = colocated.spec.config.numExperts;
    for (const e of [colocated, attention, ffn]) expect(e.rankStats(2)).toMatchObject({ role: e.info.role, rank: 2, weightBytes: e.info.residentWeightBytes });
    for (const e of [colocated, ffn]) expect(e.rankStats().experts).toMatchObject({ numExperts: E, expertStart: 0, expertEnd: E, expertParallel: false, numFfnRanks: 1 });
    expect(attention.rankStats().experts).toBeUndefined();
  });

  it('ffnForward of the ffn role equals the colocated FFN half', async () => {
    const dir = await writeTinyModel('qwen3_moe', 10);
    const colocated = await load(dir, opts);
    const ffn = await load(dir, { ...opts, role: 'ffn' });
    const H = ffn.info.hiddenSize;
    const hidden = Float32Array.from({ length: 3 * H }, (_, i) => Math.sin(i * 0.37));
    for (const layer of [0, 1, 2]) {
      expect(await ffn.ffnForward(layer, hidden, 3)).toEqual(await colocated.ffnForward(layer, hidden, 3));
    }
  });

  it('rejects driving an ffn engine like a scheduler, and an attention engine without FFN', async () => {
    const dir = await writeTinyModel('qwen3_moe', 11);
    const ffn = await load(dir, { ...opts, role: 'ffn' });
    const plan = buildStepPlan([{ tokenIds: [1], numCached: 0, blockTable: [0] }]);
    await expect(ffn.step(plan)).rejects.toThrow(/ffn-role engine has no attention half/);
    const attention = await load(dir, { ...opts, role: 'attention' });
    await expect(attention.step(plan)).rejects.toThrow(/no FFN executor/);
    expect(() => nativeEngineOf(attention).attachFfn({} as never)).toThrow(/not an Engine/);
    const colocated = await load(dir, opts);
    expect(() => attention.attachFfn(colocated)).not.toThrow();
    expect(() => colocated.attachFfn(ffn)).toThrow(/only an attention-role engine/);
  });
});

describe('sampling', () => {
  it('seeded sampling is reproducible across runs and batch mates; seeds matter; top-k 1 is greedy', async () => {
    const dir = await writeTinyModel('qwen3', 12);
    const engine = await load(dir, opts);
    const prompt = [1, 2, 3, 4];
    const sampling = { temperature: 1.5, topK: 0, topP: 1, seed: 1234 };
    const run = async (seed: number, mates: boolean, extra = {}): Promise<number> => {
      const seqs = [{ tokenIds: prompt, numCached: 0, blockTable: [0], sampling: { ...sampling, ...extra, seed } }];
      if (mates) seqs.unshift({ tokenIds: [9, 8], numCached: 0, blockTable: [3], sampling: { ...sampling, seed: 1 } });
      const r = await engine.step(buildStepPlan(seqs));
      return r.tokenIds[mates ? 1 : 0]!;
    };
    const draws = [];
    for (let seed = 0; seed < 24; seed++) {
      const t = await run(seed, false);
      expect(await run(seed, false)).toBe(t);
      expect(await run(seed, true)).toBe(t);
      draws.push(t);
    }
    expect(new Set(draws).size).toBeGreaterThan(3);
    const greedy = (await engine.step(buildStepPlan([{ tokenIds: prompt, numCached: 0, blockTable: [0] }]))).tokenIds[0];
    expect(await run(5, false, { topK: 1 })).toBe(greedy);
    expect(await run(6, false, { topP: 1e-6 })).toBe(greedy);
    expect(await run(7, false, { temperature: 0 })).toBe(greedy);
  });
});

describe('errors', () => {
  it('rejects bad plans with clear messages before they reach native code', async () => {
    const dir = await writeTinyModel('llama', 13);
    const engine = await load(dir, opts);
    const good = () => buildStepPlan([{ tokenIds: [1, 2], numCached: 0, blockTable: [0] }]);
    const bad = async (mutate: (p: ReturnType<typeof good>) => void, msg: RegExp): Promise<void> => {
      const p = good();
      mutate(p);
      await expect(engine.step(p)).rejects.toThrow(msg);
    };
    await bad((p) => (p.tokenIds[0] = 9999), /outside the vocabulary/);
    await bad((p) => (p.blockTables[0] = 31), /outside \[0, 31\)/);
    await bad((p) => (p.positions[1] = 5), /has position 5, expected 1/);
    await bad((p) => (p.contextLens[0] = 9), /needs 3 blocks/);
    await bad((p) => (p.topP[0] = 0), /topP/);
    await bad((p) => (p.stageSplit = 2), /stageSplit/);
    await bad((p) => ((p as { tokenIds: unknown }).tokenIds = [1, 2]), /tokenIds must be an Int32Array \(got Array\)/);
    await bad((p) => (p.numSeqs = 0), /numSeqs is 0; expected an integer in \[1, /);
    await bad((p) => (p.stageSplit = 0), /stageSplit is 0; expected an integer in \[1, numSeqs = 1\]/);
    await bad((p) => (p.sampleMask[0] = 2), /sampleMask\[0\] is 2; expected 0 or 1/);
    // The native layer checks too (no TS validation on the raw engine).
    const p = good();
    p.blockTables[0] = -3;
    await expect(nativeEngineOf(engine).step(p)).rejects.toThrow(/holds block -3/);
    const q = buildStepPlan([
      { tokenIds: [1], numCached: 0, blockTable: [0] },
      { tokenIds: [1], numCached: 0, blockTable: [1] },
    ]);
    q.tokenOffsets.set([0, 1000, 2]);
    await expect(nativeEngineOf(engine).step(q)).rejects.toThrow(/exceeds the 2 tokens/);
    await expect(nativeEngineOf(engine).step({ ...good(), sampleMask: new Uint8Array(5) })).rejects.toThrow(/sampleMask has 5 elements, expected 1/);
    // The C++ guard refuses what the shared check refuses, naming the field.
    const raw = async (mutate: (p: ReturnType<typeof good>) => void, msg: RegExp): Promise<void> => {
      const r = good();
      mutate(r);
      await expect(nativeEngineOf(engine).step(r)).rejects.toThrow(msg);
    };
    await raw((r) => (r.numSeqs = 0), /plan\.numSeqs is 0; expected an integer in \[1, 2147483647\]/);
    await raw((r) => (r.numSeqs = 2 ** 32 + 1), /plan\.numSeqs is 4294967297; expected an integer in \[1, 2147483647\]/);
    await raw((r) => (r.stageSplit = 0), /stageSplit 0 must be in \[1, numSeqs = 1\]/);
    await raw((r) => (r.maxBlocksPerSeq = 0), /plan\.maxBlocksPerSeq is 0; expected an integer in \[1, /);
    await raw((r) => (r.sampleMask[0] = 2), /sampleMask\[0\] is 2; expected 0 or 1/);
    await raw((r) => (r.temperature[0] = Infinity), /temperature\[0\] is inf; expected a finite number >= 0/);
    await raw((r) => ((r.sampleMask[0] = 0), (r.topP[0] = 0)), /topP\[0\] is 0; expected \(0, 1\]/);
  });

  it('rejects bad load specs with errors naming the slot or tensor', async () => {
    const dir = await writeTinyModel('llama', 14);
    const spec = await roleSpec(dir, 'colocated');
    const missing = { ...spec, tensors: spec.tensors.filter((t) => !(t.slot === 'ffn.up_proj' && t.layer === 1)) };
    await expect(Engine.load(missing, opts)).rejects.toThrow('slot layers[1].ffn.up_proj is required for this role but the load spec does not fill it');
    const outside = { ...spec, tensors: spec.tensors.map((t, i) => (i === 0 ? { ...t, offset: t.offset + 1e9 } : t)) };
    await expect(Engine.load(outside, opts)).rejects.toThrow(/lies outside/);
    // A slot the layer's kinds do not have, a layer or expert the model does not have.
    const q0 = spec.tensors.find((t) => t.slot === 'attn.q_proj' && t.layer === 0)!;
    const unknownSlot = { ...spec, tensors: [...spec.tensors, { ...q0, slot: 'attn.q_a_proj' as const }] };
    await expect(Engine.load(unknownSlot, opts)).rejects.toThrow(/fills 1 slot\(s\) no module of the colocated role binds: layers\[0\]\.attn\.q_a_proj \(model\.layers\.0\.self_attn\.q_proj\.weight\)/);
    const farLayer = { ...spec, tensors: spec.tensors.map((t) => (t === q0 ? { ...t, layer: 9 } : t)) };
    await expect(Engine.load(farLayer, opts)).rejects.toThrow('tensor model.layers.0.self_attn.q_proj.weight binds layer 9 of a model with 2 layers');
    const expertOfDense = { ...spec, tensors: spec.tensors.map((t) => (t === q0 ? { ...t, expert: 0 } : t)) };
    await expect(Engine.load(expertOfDense, opts)).rejects.toThrow(/binds expert 0 \(layer 0\) of a model with 0 routed experts/);
    const twice = { ...spec, tensors: [...spec.tensors, q0] };
    await expect(Engine.load(twice, opts)).rejects.toThrow('slot layers[0].attn.q_proj is filled twice in the load spec');
    // Layer kinds: one the engine has no module for, and mla without its hyper-parameters.
    const kinds = (ffn: string, attention = 'gqa') => ({ ...spec, config: { ...spec.config, layers: spec.config.layers.map(() => ({ attention, ffn }) as never) } });
    // TypeScript refuses a kind the engine lacks before native code (engineKinds.ts); C++ refuses it too when that check is bypassed.
    await expect(Engine.load(kinds('swiglu'), opts)).rejects.toThrow('LlamaForCausalLM (family llama): FFN kind swiglu (layers 0-1) not yet implemented on the engine');
    await expect(new (loadAddon().Engine)().load(kinds('swiglu'), opts)).rejects.toThrow('unknown FFN kind "swiglu" (this engine builds dense, moe, moe+shared and moe+gated_shared layers)');
    await expect(Engine.load(kinds('dense', 'mla'), opts)).rejects.toThrow('mla layers need the MLA settings (config.mla)');
    await expect(Engine.load(spec, { ...opts, backend: 'tpu' })).rejects.toThrow(/backend "tpu"/);
    await expect(Engine.load(spec, { ...opts, kvBlockSize: 0 })).rejects.toThrow(/kvBlockSize must be in \[1, 1024\]/);
    await expect(Engine.load(spec, { ...opts, numKvBlocks: -1 })).rejects.toThrow(/numKvBlocks must be >= 0/);
    await expect(Engine.load(spec, { ...opts, kvMemoryFraction: 1.5 })).rejects.toThrow(/kvMemoryFraction must be a number in \(0, 0.99\]/);
    // The CUDA kernel choices are checked on every backend (the CPU backend ignores them).
    await expect(Engine.load(spec, { ...opts, attentionKernel: 'mma' as never })).rejects.toThrow('options.attentionKernel must be simt, tc or auto (got "mma")');
    await expect(Engine.load(spec, { ...opts, attentionBlocksPerSm: 0 })).rejects.toThrow('attentionBlocksPerSm must be in [1, 16] (got 0)');
    await expect(Engine.load(spec, { ...opts, attentionPrecision: 'fp8' as never })).rejects.toThrow('options.attentionPrecision must be split or bf16 (got "fp8")');
    await expect(Engine.load(spec, { ...opts, expertGemm: 'blas' as never })).rejects.toThrow('options.expertGemm must be ours, cublas or auto (got "blas")');
    await expect(Engine.load(spec, { ...opts, expertGemmMinTokens: 2 ** 32 })).rejects.toThrow('options.expertGemmMinTokens is 4294967296; expected a 32-bit integer');
    // The CPU backend does not track free memory: a fraction leaves kvCacheBytes in charge.
    const sized = await load(spec, { ...opts, numKvBlocks: 0, kvCacheBytes: 8 * 2 ** 20, kvMemoryFraction: 0.5 });
    const fixed = await load(spec, { ...opts, numKvBlocks: 0, kvCacheBytes: 8 * 2 ** 20 });
    expect(sized.info.numKvBlocks).toBe(fixed.info.numKvBlocks);
    // Optional fields may be undefined.
    const e = await load(spec, { threads: undefined, kvBlockSize: 8 } as never);
    expect(e.info.kvBlockSize).toBe(8);
  });
});
