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
