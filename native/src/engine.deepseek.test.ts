/**
 * DeepSeek-V2/V3 in the engine (CPU): the latent KV cache (its size, absorbed decode
 * against expanded prefill, batch independence, low-precision caches) and the role
 * split with the gate on either side. The logits themselves are checked against the
 * float64 reference in engine.test.ts and against transformers in engine.golden.test.ts.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { buildStepPlan } from '@afd/shared';
import { describe, expect, it } from 'vitest';
import { Engine } from './engine.js';
import { roleLoadSpec } from './checkpoint/loadSpec.js';
import { tempDir } from './testing/checkpointTesting.js';
import { relErr } from './testing/engineReference.js';
import { testEngines } from './testing/testEngines.js';
import { expectFfnForwardEqual } from './testing/ffnForwardCheck.js';
import { generateGreedy, scatteredBlocks, tinyConfigs, writeTinyModel } from './testing/engineTesting.js';

const opts = { threads: 2, kvBlockSize: 4, numKvBlocks: 31 };
const { load, dirs } = testEngines();
async function tiny(arch: 'deepseek_v2' | 'deepseek_v3', seed: number): Promise<string> {
  const dir = await writeTinyModel(arch, seed);
  dirs.push(dir);
  return dir;
}

const prompt = [3, 17, 5, 9, 1, 30, 12, 8, 2];

describe.each(['deepseek_v2', 'deepseek_v3'] as const)('%s latent KV cache', (arch) => {
  it('holds kv_lora_rank + qk_rope_head_dim values per token and layer, and sizes the pool by them', async () => {
    const dir = await tiny(arch, 21);
    const engine = await load(dir, opts);
    const { mla, numLayers } = engine.spec.config;
    const row = mla!.kvLoraRank + mla!.qkRopeHeadDim;
    expect(engine.info.kvBytesPerBlock).toBe(numLayers * opts.kvBlockSize * row * 4);
    const bf16 = await load(dir, { ...opts, kvDtype: 'bf16', numKvBlocks: 0, kvCacheBytes: 1 << 20 });
    expect(bf16.info.kvBytesPerBlock).toBe(numLayers * opts.kvBlockSize * row * 2);
    expect(bf16.info.numKvBlocks).toBe(Math.floor((1 << 20) / bf16.info.kvBytesPerBlock));
  });

  it('absorbed decode (one token per step) matches expanded prefill (whole or chunked prompt)', async () => {
    const dir = await tiny(arch, 22);
    const engine = await load(dir, opts);
    const whole = await generateGreedy(engine, prompt, 5, { blocks: scatteredBlocks(4, 1, 31) });
    const chunked = await generateGreedy(engine, prompt, 5, { chunk: 4, blocks: scatteredBlocks(4, 2, 31) });
    const single = await generateGreedy(engine, prompt, 5, { chunk: 1, blocks: scatteredBlocks(4, 3, 31) });
    expect(chunked.tokens).toEqual(whole.tokens);
    expect(single.tokens).toEqual(whole.tokens);
    for (let i = 0; i < whole.logits.length; i++) {
      expect(relErr(chunked.logits[i]!, whole.logits[i]!)).toBeLessThan(1e-5);
      expect(relErr(single.logits[i]!, whole.logits[i]!)).toBeLessThan(1e-5);
    }
  });

  it('a sequence does not depend on its batch mates (prefill + decode rows, two stages)', async () => {
    const dir = await tiny(arch, 23);
    const engine = await load(dir, opts);
    const V = engine.info.vocabSize;
    const a = [4, 8, 15, 16, 23];
    const alone = await engine.step(buildStepPlan([{ tokenIds: a, numCached: 0, blockTable: [5, 6] }], { returnLogits: true }));
    await engine.step(buildStepPlan([{ tokenIds: [9, 9, 9, 9, 9], numCached: 0, blockTable: [10, 11] }]));
    const decodeAlone = await engine.step(buildStepPlan([{ tokenIds: [3], numCached: 5, blockTable: [10, 11] }], { returnLogits: true }));
    for (const stageSplit of [2, 1]) {
      const plan = buildStepPlan(
        [
          { tokenIds: a, numCached: 0, blockTable: [1, 2] },
          { tokenIds: [3], numCached: 5, blockTable: [10, 11] },
        ],
        { returnLogits: true, stageSplit },
      );
      const batched = await engine.step(plan);
      expect(batched.logits!.subarray(0, V)).toEqual(alone.logits);
      expect(batched.logits!.subarray(V, 2 * V)).toEqual(decodeAlone.logits);
    }
  });

  it('a bf16 or f16 latent cache stays close to the f32 one', async () => {
    const dir = await tiny(arch, 24);
    const base = await generateGreedy(await load(dir, opts), prompt, 3, { blocks: [0, 1, 2, 3] });
    for (const kvDtype of ['bf16', 'f16'] as const) {
      const low = await generateGreedy(await load(dir, { ...opts, kvDtype }), prompt, 3, { blocks: [0, 1, 2, 3] });
      for (const [i, l] of low.logits.entries()) expect(relErr(l, base.logits[i]!)).toBeLessThan(2e-2);
    }
  });
});

describe.each(['deepseek_v2', 'deepseek_v3'] as const)('%s role split', (arch) => {
  it.each([false, true])('attention + ffn engines equal colocated, dense layers included (gate on attention: %s)', async (gateOnAttention) => {
    const dir = await tiny(arch, 25);
    const colocated = await load(dir, opts);
    const attention = await load(dir, { ...opts, role: 'attention', computeGateOnAttention: gateOnAttention });
    const ffn = await load(dir, { ...opts, role: 'ffn', computeGateOnAttention: gateOnAttention });
    expect(attention.info.residentWeightBytes + ffn.info.residentWeightBytes).toBe(colocated.info.residentWeightBytes);
    const names = (e: Engine) => e.spec.tensors.map((t) => t.name);
    // The score bias (V3) goes where the gate goes; MLA stays on attention; shared experts and dense MLPs on the FFN role.
    expect(names(attention).some((n) => n.endsWith('e_score_correction_bias'))).toBe(gateOnAttention && arch === 'deepseek_v3');
    expect(names(ffn).some((n) => n.endsWith('e_score_correction_bias'))).toBe(!gateOnAttention && arch === 'deepseek_v3');
    expect(names(ffn).some((n) => n.includes('kv_b_proj'))).toBe(false);
    expect(names(ffn)).toContain('model.layers.0.mlp.gate_proj.weight');
    expect(names(ffn).some((n) => n.includes('shared_experts'))).toBe(true);
    attention.attachFfn(ffn);
    const ref = await generateGreedy(colocated, prompt, 4, { blocks: [0, 1, 2, 3] });
    const split = await generateGreedy(attention, prompt, 4, { blocks: [0, 1, 2, 3] });
    expect(split.tokens).toEqual(ref.tokens);
    for (let i = 0; i < ref.logits.length; i++) expect(split.logits[i]).toEqual(ref.logits[i]);
    expect(ffn.stats().stepsServed).toBe(4);
  });

  it('ffnForward of the ffn role equals the colocated FFN half on dense and MoE layers', async () => {
    const dir = await tiny(arch, 26);
    const colocated = await load(dir, opts);
    const ffn = await load(dir, { ...opts, role: 'ffn' });
    await expectFfnForwardEqual(colocated, ffn);
  });
});

describe('DeepSeek with dummy weights (config only)', () => {
  it.each([false, true])('a config-only directory serves with --load-format dummy; split roles equal colocated (gate on attention: %s)', async (gate) => {
    const dir = await tempDir('afd-ds-dummy-');
    dirs.push(dir);
    await writeFile(join(dir, 'config.json'), JSON.stringify(tinyConfigs['deepseek_v3']));
    await expect(roleLoadSpec(dir, 'colocated')).rejects.toThrow(/--load-format dummy/);
    const spec = async (role: 'colocated' | 'attention' | 'ffn') => (await roleLoadSpec(dir, role, { loadFormat: 'dummy', seed: 5, computeGateOnAttention: gate })).spec;
    const colocated = await load(await spec('colocated'), opts);
    const attention = await load(await spec('attention'), opts);
    attention.attachFfn(await load(await spec('ffn'), opts));
    const ref = await generateGreedy(colocated, prompt, 4, { blocks: [0, 1, 2, 3] });
    const split = await generateGreedy(attention, prompt, 4, { blocks: [0, 1, 2, 3] });
    expect(split.tokens).toEqual(ref.tokens);
    for (let i = 0; i < ref.logits.length; i++) expect(split.logits[i]).toEqual(ref.logits[i]);
    expect(ref.logits[0]!.some((v) => v !== ref.logits[0]![0])).toBe(true);
  });
});
