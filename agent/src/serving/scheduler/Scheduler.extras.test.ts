/**
 * The scheduler with penalties, biases and log-probabilities, driven by the FakeEngine (which
 * honours them): plans carry each sequence's extras, and rows come back to the right sequence,
 * prompt rows assembled across the chunks of a chunked prefill.
 */
import { describe, expect, it } from 'vitest';
import { BlockManager } from '../kv/BlockManager.js';
import { FakeEngine } from '../testing/FakeEngine.js';
import { testServingOptions } from '../testing/testServer.js';
import { Scheduler, type SchedulerConfig, type SeqOutput } from './Scheduler.js';
import { Sequence, type SeqLogitOptions, type StopParams } from './Sequence.js';

const greedy = { temperature: 0, topK: 0, topP: 1, seed: 7 };
const config = (over: Partial<SchedulerConfig> = {}): SchedulerConfig => ({ ...testServingOptions.scheduler, maxModelLen: 1024, ...over });
let arrival = 0;
function seq(prompt: number[], logits: SeqLogitOptions, stop: Partial<StopParams> = {}): Sequence {
  return new Sequence(`s${arrival}`, prompt, greedy, { maxTokens: 6, eosTokenIds: [151_645], stopTokenIds: [], ignoreEos: false, ...stop }, arrival++, logits);
}

/** Runs the scheduler over the engine until it has no work; returns every output. */
async function run(s: Scheduler, engine: FakeEngine): Promise<SeqOutput[]> {
  const outputs: SeqOutput[] = [];
  for (let guard = 0; s.hasWork() && guard < 100; guard++) {
    const step = s.schedule()!;
    outputs.push(...s.update(step, await engine.step(step.plan)));
  }
  return outputs;
}

describe('Scheduler with extras', () => {
  it('assembles prompt logprobs across prefill chunks and routes sampled rows to their sequence', async () => {
    const engine = new FakeEngine({ kvBlockSize: 4, numKvBlocks: 32 });
    const s = new Scheduler(config({ longPrefillTokenThreshold: 4 }), new BlockManager(32, 4));
    const prompt = [100, 101, 102, 103, 104, 105, 106, 107, 108, 109];
    const a = seq(prompt, { promptLogprobs: 2, logprobs: 1 });
    const b = seq([5, 6], {});
    s.add(a);
    s.add(b);
    const outputs = await run(s, engine);
    expect(engine.plans[0]!.extras!.nextPromptTokenIds[0]).toBe(104); // chunk [0, 4) of a
    expect(a.promptLogprobs.map((r) => r.tokenId)).toEqual(prompt.slice(1));
    expect(a.promptLogprobs.every((r) => r.top.length === 2 && r.rank >= 1)).toBe(true);
    const ofA = outputs.filter((o) => o.seq === a);
    expect(ofA).toHaveLength(6);
    ofA.forEach((o) => expect(o.logprobs).toMatchObject({ tokenId: o.tokenId, rank: 1, top: [{ tokenId: o.tokenId }] }));
    expect(outputs.filter((o) => o.seq === b).every((o) => o.logprobs === undefined)).toBe(true);
  });

  it('min_tokens: the engine cannot pick EOS before, and EOS ends the sequence right after', async () => {
    const eos = 151_645;
    const engine = new FakeEngine({ nextToken: () => eos }); // the model always prefers EOS
    const s = new Scheduler(config(), new BlockManager(16, 16));
    const a = seq([1, 2], {}, { minTokens: 3, maxTokens: 10 });
    s.add(a);
    const outputs = await run(s, engine);
    expect(a.outputIds.slice(0, 3).includes(eos)).toBe(false);
    expect(a.outputIds).toHaveLength(4);
    expect(outputs.at(-1)).toMatchObject({ tokenId: eos, finishReason: 'stop' });
  });

  it('a +100 logit bias makes every token the biased one; a frequency penalty shows in the reported logprobs', async () => {
    const preferred = 9707; // the fake model always prefers it; its runner-up 1879 trails by 20 nats
    const engine = new FakeEngine({ nextToken: () => preferred });
    const s = new Scheduler(config(), new BlockManager(16, 16));
    const biased = seq([1, 2], { logitBias: new Map([[777, 100]]) });
    const penalised = seq([1, 2], { penalties: { presence: 0, frequency: 3, repetition: 1 }, logprobs: 2 });
    s.add(biased);
    s.add(penalised);
    const outputs = await run(s, engine);
    expect(biased.outputIds).toEqual(new Array(6).fill(777));
    expect(penalised.outputIds).toEqual(new Array(6).fill(preferred));
    // Each earlier occurrence of the preferred token costs it 3 (frequency penalty): the gap
    // to the runner-up, 20 nats without penalty, shrinks by 3 per token generated.
    const rows = outputs.filter((o) => o.seq === penalised).map((o) => o.logprobs!);
    rows.forEach((r, k) => {
      expect(r.top.map((e) => e.tokenId)).toEqual([preferred, 1879]);
      expect(r.top[0]!.logprob - r.top[1]!.logprob).toBeCloseTo(20 - 3 * k, 4);
    });
  });

  it('penalty slots: a list crosses once per slot, the slot is reseeded after a preemption and freed at the end', async () => {
    const engine = new FakeEngine({ kvBlockSize: 2, numKvBlocks: 4 });
    // 4 blocks of 2 tokens: a and b (3-token prompts) fill them; b is preempted when a grows.
    const s = new Scheduler(config(), new BlockManager(4, 2));
    const pen = { penalties: { presence: 0.5, frequency: 1, repetition: 1.3 } };
    const a = seq([100, 101, 102], pen, { maxTokens: 4 });
    const b = seq([200, 201, 200], pen, { maxTokens: 4 });
    s.add(a);
    s.add(b);
    await run(s, engine);
    const rows = engine.plans.map((plan) => {
      const x = plan.extras!;
      return Array.from({ length: plan.numSeqs }, (_, i) => [x.penaltySlots![i], x.penaltySlotSeeds![i], x.seenOffsets[i + 1]! - x.seenOffsets[i]!]);
    });
    // Step 1 seeds both slots with the distinct prompt tokens (repetition on); step 2 sends nothing.
    expect(rows[0]).toEqual([[0, 1, 3], [1, 1, 2]]);
    expect(rows[1]).toEqual([[0, 0, 0], [1, 0, 0]]);
    // b is preempted in step 3 (its slot freed); when it runs again it takes a free slot
    // (the lowest) and seeds it with its prompt plus the 2 tokens it had generated.
    const reseed = rows.findIndex((r, k) => k > 1 && r.some(([, seed]) => seed === 1));
    expect(reseed).toBeGreaterThan(1);
    const distinct = new Set([200, 201, ...b.outputIds.slice(0, 2)]).size;
    expect(rows[reseed]).toContainEqual([expect.any(Number), 1, distinct]);
    expect(s.numPreemptions).toBe(1);
    expect(s.penaltySlots.numTaken).toBe(0);
  });

  it('penalty slots give the same tokens and logprobs as lists sent every step', async () => {
    const picks = (ctx: { lastTokenId: number; position: number }): number => [11, 12, 13][(ctx.lastTokenId + ctx.position) % 3]!;
    const engine = new FakeEngine({ nextToken: picks });
    const s = new Scheduler(config(), new BlockManager(16, 16));
    const a = seq([11, 12], { penalties: { presence: 0.7, frequency: 0.9, repetition: 1.4 }, logprobs: 3 }, { maxTokens: 8 });
    s.add(a);
    const viaSlots = (await run(s, engine)).map((o) => o.logprobs!);
    // The same plans replayed on a fresh engine with each step's whole seen list and no slots.
    const fresh = new FakeEngine({ nextToken: picks });
    const seen = new Map([[11, 0], [12, 0]]);
    const viaLists: { tokenId: number; logprob: number }[] = [];
    for (const plan of engine.plans) {
      const { penaltySlots: _slots, penaltySlotSeeds: _seeds, ...rest } = plan.extras!;
      const ids = Int32Array.from(seen.keys());
      const extras = { ...rest, seenOffsets: Int32Array.from([0, ids.length]), seenTokenIds: ids, seenCounts: Int32Array.from(seen.values()) };
      const result = await fresh.step({ ...plan, extras });
      const t = result.tokenIds[0]!;
      seen.set(t, (seen.get(t) ?? 0) + 1);
      viaLists.push({ tokenId: t, logprob: result.logprobs!.logprobs[0]! });
    }
    expect(viaLists.map((r) => r.tokenId)).toEqual(a.outputIds);
    viaLists.forEach((r, k) => expect(r.logprob).toBeCloseTo(viaSlots[k]!.logprob, 5));
    // The penalties did act: the chosen token's logprob moves as its count grows.
    expect(new Set(viaSlots.map((r) => r.logprob.toFixed(3))).size).toBeGreaterThan(1);
  });

  it('a result without the rows the step asked for fails the step before changing anything', async () => {
    const s = new Scheduler(config(), new BlockManager(16, 16));
    const a = seq([1, 2], { logprobs: 0 });
    s.add(a);
    const step = s.schedule()!;
    expect(() => s.update(step, { tokenIds: new Int32Array([5]), stepTimeMs: 1 })).toThrow(/0 logprob rows for sequence 0 of the step, expected 1/);
    expect(a.numComputedTokens).toBe(0);
    expect(s.failStep(step)).toEqual([a]);
    expect(s.blocks.numUsedBlocks).toBe(0);
  });
});
