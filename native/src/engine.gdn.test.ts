/**
 * Qwen3-Next and Qwen3.5-MoE with their Gated DeltaNet (gdn) layers in the engine (CPU):
 * logits of a prefill and 32+ greedy decode steps against the float64 reference; chunked
 * prefill; the per-sequence recurrent state in its slot (StepPlan.stateSlots): batch
 * mates, a reused slot starting over, dual-batch overlap; the plans the engine refuses;
 * the slot count and size in the engine info; the attention / FFN role split.
 */
import { describe, expect, it } from 'vitest';
import type { ModelLoadSpec } from './modelSpec.js';
import { gdnConfigs, generate, rows, slotPlan, top2, writeGdnModel, type SlotSeq } from './testing/gdnTesting.js';
import { qwen3NextReferenceLogits } from './testing/engineReferenceQwen3Next.js';
import { roleSpec, scatteredBlocks, writeTinyModel } from './testing/engineTesting.js';
import { expectFfnForwardEqual } from './testing/ffnForwardCheck.js';
import { testEngines } from './testing/testEngines.js';

const numKvBlocks = 61;
const opts = { threads: 2, kvBlockSize: 4, numKvBlocks, numStateSlots: 4 };
const { load, dirs } = testEngines();

const configs = gdnConfigs;

async function writeModel(arch: string, seed: number): Promise<string> {
  const dir = await writeGdnModel(arch, seed);
  dirs.push(dir);
  return dir;
}

const maxAbsDiff = (a: ArrayLike<number>, b: ArrayLike<number>): number => {
  let m = 0;
  for (let i = 0; i < b.length; i++) m = Math.max(m, Math.abs(a[i]! - b[i]!));
  return m;
};

/** Every logit row of one sequence's generation against the float64 reference over prompt + tokens. */
function expectReference(spec: ModelLoadSpec, prompt: readonly number[], out: { tokens: number[]; logits: Float32Array[] }): void {
  const ref = qwen3NextReferenceLogits(spec, [...prompt, ...out.tokens.slice(0, -1)]);
  out.logits.forEach((row, i) => {
    const r = ref[prompt.length - 1 + i]!;
    expect(maxAbsDiff(row, r), `step ${i}`).toBeLessThanOrEqual(1e-3);
    const { argmax, margin } = top2(r);
    if (margin > 1e-3) expect(out.tokens[i], `step ${i}`).toBe(argmax);
  });
}

function expectSameLogits(a: readonly Float32Array[], b: readonly Float32Array[], tol = 1e-5): void {
  expect(a.length).toBe(b.length);
  a.forEach((row, i) => expect(maxAbsDiff(row, b[i]!), `row ${i}`).toBeLessThanOrEqual(tol));
}

const prompt = [3, 17, 5, 9, 1, 30, 12, 8, 2];
const other = [44, 7, 61, 20];

describe.each(Object.keys(configs))('%s with Gated DeltaNet layers', (arch) => {
  it('loads the layers the test is about (three gdn, one gated full attention; its projection layout)', async () => {
    const spec = await roleSpec(await writeModel(arch, 1), 'colocated');
    expect(spec.config.layers.map((k) => k.attention)).toEqual(['gdn', 'gdn', 'gdn', 'gqa_gated']);
    expect(spec.config.gdn!.projLayout).toBe(arch === 'qwen3_next' ? 'grouped' : 'split');
  });

  it('info has numStateSlots (the option, default 64) and stateBytesPerSlot (f32 conv [C, W-1] + delta [Hv, Dk, Dv] per gdn layer)', async () => {
    const dir = await writeModel(arch, 2);
    const engine = await load(dir, opts);
    const g = engine.spec.config.gdn!;
    const C = 2 * g.numKeyHeads * g.keyHeadDim + g.numValueHeads * g.valueHeadDim;
    const perLayer = 4 * (C * (g.convKernel - 1) + g.numValueHeads * g.keyHeadDim * g.valueHeadDim);
    const gdnLayers = engine.spec.config.layers.filter((k) => k.attention === 'gdn').length;
    expect(engine.info.numStateSlots).toBe(opts.numStateSlots);
    expect(engine.info.stateBytesPerSlot).toBe(gdnLayers * perLayer);
    expect((await load(dir, { ...opts, numStateSlots: 7 })).info.numStateSlots).toBe(7);
    expect((await load(dir, { threads: 2, kvBlockSize: 4, numKvBlocks })).info.numStateSlots).toBe(64);
  });

  it('prefill then 33 greedy decode steps: logits within 1e-3 of the float64 reference at every step', async () => {
    const spec = await roleSpec(await writeModel(arch, 3), 'colocated');
    const engine = await load(spec, opts);
    const out = await generate(engine, [{ prompt, blocks: scatteredBlocks(11, 1, numKvBlocks), slot: 2 }], 34);
    expectReference(spec, prompt, { tokens: out.tokens[0]!, logits: out.logits[0]! });
  });

  it('chunked prefill (chunks of 4, of 1) gives the logits of one whole prefill', async () => {
    const engine = await load(await writeModel(arch, 4), opts);
    const whole = await generate(engine, [{ prompt, blocks: scatteredBlocks(5, 1, numKvBlocks), slot: 0 }], 5);
    for (const chunk of [4, 1]) {
      const chunked = await generate(engine, [{ prompt, blocks: scatteredBlocks(5, 2 + chunk, numKvBlocks), slot: chunk === 1 ? 2 : 3 }], 5, { chunk });
      expect(chunked.tokens).toEqual(whole.tokens);
      expectSameLogits(chunked.logits[0]!, whole.logits[0]!);
    }
  });

  it('two sequences of different lengths in one step, each in its own slot, equal each run alone (prefill beside decode included)', async () => {
    const engine = await load(await writeModel(arch, 5), opts);
    const a = { prompt, blocks: scatteredBlocks(4, 1, numKvBlocks), slot: 3 };
    const b = { prompt: other, blocks: scatteredBlocks(3, 2, numKvBlocks), slot: 1 };
    const aloneA = await generate(engine, [a], 6);
    const aloneB = await generate(engine, [b], 5);
    // A prefills alone, then decodes beside B's prefill, then both decode.
    const first = await engine.step(slotPlan([{ ids: prompt, cached: 0, blocks: a.blocks, slot: 2 }]));
    const aTokens = [first.tokenIds[0]!];
    const aLogits = [Float32Array.from(first.logits!)];
    const bTokens: number[] = [];
    const bLogits: Float32Array[] = [];
    for (let s = 0; s < 5; s++) {
      const seqs: SlotSeq[] = [
        { ids: [aTokens.at(-1)!], cached: prompt.length + s, blocks: a.blocks, slot: 2 },
        s === 0 ? { ids: other, cached: 0, blocks: b.blocks, slot: 0 } : { ids: [bTokens.at(-1)!], cached: other.length + s - 1, blocks: b.blocks, slot: 0 },
      ];
      const out = await engine.step(slotPlan(seqs));
      const [ra, rb] = rows(engine, out.logits!);
      aTokens.push(out.tokenIds[0]!);
      aLogits.push(Float32Array.from(ra!));
      bTokens.push(out.tokenIds[1]!);
      bLogits.push(Float32Array.from(rb!));
    }
    expect(aTokens).toEqual(aloneA.tokens[0]);
    expect(bTokens).toEqual(aloneB.tokens[0]);
    expectSameLogits(aLogits, aloneA.logits[0]!);
    expectSameLogits(bLogits, aloneB.logits[0]!);
  });

  it('a slot reused by a new sequence from position 0 starts from the zero state (whole or chunked prefill)', async () => {
    const spec = await roleSpec(await writeModel(arch, 6), 'colocated');
    const engine = await load(spec, opts);
    // Slot 1 ends up holding the state of a long sequence.
    await generate(engine, [{ prompt, blocks: scatteredBlocks(5, 1, numKvBlocks), slot: 1 }], 8);
    const fresh = await generate(await load(spec, opts), [{ prompt: other, blocks: scatteredBlocks(3, 2, numKvBlocks), slot: 1 }], 6);
    for (const chunk of [undefined, 2]) {
      const reused = await generate(engine, [{ prompt: other, blocks: scatteredBlocks(3, 3, numKvBlocks), slot: 1 }], 6, chunk === undefined ? {} : { chunk });
      expect(reused.tokens).toEqual(fresh.tokens);
      expectSameLogits(reused.logits[0]!, fresh.logits[0]!);
    }
    expectReference(spec, other, { tokens: fresh.tokens[0]!, logits: fresh.logits[0]! });
  });

  it('dual-batch overlap (the batch split into two stages) equals one stage, prefill and decode', async () => {
    const engine = await load(await writeModel(arch, 7), opts);
    const seqs = [
      { prompt, blocks: scatteredBlocks(4, 1, numKvBlocks), slot: 0 },
      { prompt: other, blocks: scatteredBlocks(3, 2, numKvBlocks), slot: 3 },
    ];
    const one = await generate(engine, seqs, 5);
    const two = await generate(engine, seqs, 5, { stageSplit: 1 });
    expect(two.tokens).toEqual(one.tokens);
    seqs.forEach((_, s) => expectSameLogits(two.logits[s]!, one.logits[s]!));
  });

  it('refuses a plan without stateSlots, with a slot out of range, or with a slot used twice, naming stateSlots', async () => {
    const engine = await load(await writeModel(arch, 8), opts);
    const seqs: SlotSeq[] = [
      { ids: prompt, cached: 0, blocks: scatteredBlocks(3, 1, numKvBlocks), slot: 0 },
      { ids: other, cached: 0, blocks: scatteredBlocks(3, 2, numKvBlocks), slot: 1 },
    ];
    const without = slotPlan(seqs);
    delete without.stateSlots;
    await expect(async () => engine.step(without)).rejects.toThrow(/stateSlots/);
    await expect(async () => engine.step(slotPlan([seqs[0]!, { ...seqs[1]!, slot: engine.info.numStateSlots }]))).rejects.toThrow(/stateSlots/);
    await expect(async () => engine.step(slotPlan([seqs[0]!, { ...seqs[1]!, slot: -1 }]))).rejects.toThrow(/stateSlots/);
    await expect(async () => engine.step(slotPlan([seqs[0]!, { ...seqs[1]!, slot: 0 }]))).rejects.toThrow(/stateSlots/);
    // The engine still serves a valid plan afterwards.
    const ok = await engine.step(slotPlan(seqs));
    expect(ok.tokenIds.length).toBe(2);
  });

  it.each([false, true])('attention + ffn engines give the colocated tokens and logits, two sequences over two stages (gate on attention: %s)', async (gateOnAttention) => {
    const dir = await writeModel(arch, 9);
    const colocated = await load(dir, opts);
    const attention = await load(dir, { ...opts, role: 'attention', computeGateOnAttention: gateOnAttention });
    const ffn = await load(dir, { ...opts, role: 'ffn', computeGateOnAttention: gateOnAttention });
    // The gdn weights stay on the attention role.
    expect(attention.spec.tensors.some((t) => t.slot === 'attn.conv1d')).toBe(true);
    expect(ffn.spec.tensors.some((t) => t.slot.startsWith('attn.'))).toBe(false);
    expect(attention.info.numStateSlots).toBe(opts.numStateSlots);
    attention.attachFfn(ffn);
    const seqs = [
      { prompt, blocks: scatteredBlocks(4, 1, numKvBlocks), slot: 1 },
      { prompt: other, blocks: scatteredBlocks(3, 2, numKvBlocks), slot: 2 },
    ];
    for (const stageSplit of [2, 1]) {
      const ref = await generate(colocated, seqs, 4, { stageSplit });
      const split = await generate(attention, seqs, 4, { stageSplit });
      expect(split.tokens).toEqual(ref.tokens);
      seqs.forEach((_, s) => split.logits[s]!.forEach((row, i) => expect(row).toEqual(ref.logits[s]![i])));
    }
  });

  it('ffnForward of the ffn role equals the colocated FFN half on every layer', async () => {
    const dir = await writeModel(arch, 10);
    await expectFfnForwardEqual(await load(dir, opts), await load(dir, { ...opts, role: 'ffn' }));
  });
});

describe('a model without gdn layers', () => {
  it('has no state slots and refuses a plan with stateSlots', async () => {
    const dir = await writeTinyModel('qwen3', 12);
    dirs.push(dir);
    const engine = await load(dir, opts);
    expect(engine.info.numStateSlots).toBe(0);
    expect(engine.info.stateBytesPerSlot).toBe(0);
    const plan = slotPlan([{ ids: prompt, cached: 0, blocks: [0, 1, 2], slot: 0 }]);
    await expect(async () => engine.step(plan)).rejects.toThrow(/stateSlots/);
    delete plan.stateSlots;
    expect((await engine.step(plan)).tokenIds.length).toBe(1);
  });
});
