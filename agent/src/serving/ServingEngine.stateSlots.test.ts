/**
 * ServingEngine on a model with linear-attention (gdn) layers: the engine's info.numStateSlots
 * configures the scheduler, every plan carries stateSlots (the fake engine checks that each
 * continued sequence finds its own state), and nothing reuses KV.
 */
import { describe, expect, it } from 'vitest';
import { tokenIdsOf } from './testing/handleTokens.js';
import { ServingEngine, type ServingOptions } from './ServingEngine.js';
import { FakeEngine, historySampler } from './testing/FakeEngine.js';
import { qwenTokenizer } from './testing/qwenTokenizer.js';

const tok = await qwenTokenizer();
const options: ServingOptions = {
  scheduler: { maxNumSeqs: 8, maxNumBatchedTokens: 32, longPrefillTokenThreshold: 12, dbo: { enabled: false, decodeTokenThreshold: 32, prefillTokenThreshold: 512 } },
  maxQueuedRequests: 100,
};
const words = tok.encode(' the cat sat on a mat and then it ran far away', false);
const prompt = tok.encode('Tell me a story about a cat who lived in a big old house by the sea');
const sampled = { temperature: 1, topK: 0, topP: 1 };
const ids = tokenIdsOf;

describe('ServingEngine with recurrent-state slots (info.numStateSlots > 0)', () => {
  it('takes its slots from the engine info; every plan carries them; all come back', async () => {
    const engine = new FakeEngine({ kvBlockSize: 4, numStateSlots: 8, nextToken: historySampler(words) });
    const serving = new ServingEngine(engine, tok, options);
    expect(serving.scheduler.stateSlots?.limit).toBe(8);
    expect(serving.scheduler.blocks.prefixCaching).toBe(false);
    const texts = await Promise.all(Array.from({ length: 3 }, (_, i) => ids(serving.submit({ promptIds: prompt, sampling: { ...sampled, seed: i }, maxTokens: 5 }))));
    expect(texts.every((t) => t.length === 5)).toBe(true);
    for (const plan of engine.plans) expect(plan.stateSlots).toHaveLength(plan.numSeqs);
    expect(serving.scheduler.stateSlots!.numTaken).toBe(0);
    expect(serving.scheduler.blocks.owners()).toEqual([]);
  });

  it('n samples each prefill the whole prompt, and each equals its n=1 run', async () => {
    const engine = new FakeEngine({ kvBlockSize: 4, numStateSlots: 8, nextToken: historySampler(words) });
    const serving = new ServingEngine(engine, tok, options);
    const texts = await Promise.all(serving.submitAll([{ promptIds: prompt, sampling: { ...sampled, seed: 40 }, maxTokens: 6, n: 3 }]).map(ids));
    expect(serving.scheduler.promptSharing.numSharedTokens).toBe(0);
    const prefilled = engine.plans.flatMap((p) => Array.from({ length: p.numSeqs }, (_, i) => p.positions[p.tokenOffsets[i]!]!)).filter((pos) => pos === 0);
    expect(prefilled).toHaveLength(3); // each sample starts its own prompt at position 0
    for (const [i, seed] of [40, 41, 42].entries()) {
      expect(await ids(serving.submit({ promptIds: prompt, sampling: { ...sampled, seed }, maxTokens: 6 })), `sample ${i}`).toEqual(texts[i]);
    }
    expect(serving.scheduler.blocks.owners()).toEqual([]);
  });

  it('under KV pressure, preempted requests restart from position 0 and give the outputs of a roomy cache', async () => {
    const run = async (numKvBlocks: number): Promise<{ texts: number[][]; preemptions: number }> => {
      const engine = new FakeEngine({ kvBlockSize: 4, numKvBlocks, numStateSlots: 8, nextToken: historySampler(words) });
      const serving = new ServingEngine(engine, tok, options);
      const texts = await Promise.all(Array.from({ length: 12 }, (_, i) => ids(serving.submit({ promptIds: prompt.slice(0, 5 + (i % 9)), sampling: { ...sampled, seed: i }, maxTokens: 8 + (i % 5) }))));
      expect(serving.scheduler.stateSlots!.numTaken).toBe(0);
      expect(serving.scheduler.blocks.numUsedBlocks).toBe(0);
      return { texts, preemptions: serving.scheduler.numPreemptions };
    };
    const tight = await run(14);
    const roomy = await run(256);
    expect(tight.preemptions).toBeGreaterThan(0);
    expect(roomy.preemptions).toBe(0);
    expect(tight.texts).toEqual(roomy.texts);
  });

  it('refuses prefix caching, and maxNumSeqs above the engine\'s slots', () => {
    expect(() => new ServingEngine(new FakeEngine({ numStateSlots: 8 }), tok, { ...options, prefixCaching: true })).toThrow(
      /prefix caching must be off with recurrent-state slots \(numStateSlots > 0\): its linear-attention \(gdn\) layers keep per-sequence recurrent state that KV blocks do not hold/,
    );
    expect(() => new ServingEngine(new FakeEngine({ numStateSlots: 4 }), tok, options)).toThrow(/maxNumSeqs 8 is more than the engine's 4 recurrent-state slots/);
    expect(new ServingEngine(new FakeEngine({ numStateSlots: 8 }), tok, { ...options, prefixCaching: false }).scheduler.blocks.prefixCaching).toBe(false);
  });

  it('the fake engine refuses a continued sequence whose slot holds another state', async () => {
    const engine = new FakeEngine({ kvBlockSize: 4, numStateSlots: 8 });
    const serving = new ServingEngine(engine, tok, options);
    const h = serving.submit({ promptIds: prompt, sampling: { ...sampled, seed: 1 }, maxTokens: 4 });
    const scheduler = serving.scheduler; // its third step (a decode) names another slot
    const original = scheduler.schedule.bind(scheduler);
    let calls = 0;
    scheduler.schedule = () => {
      const s = original();
      if (s && ++calls === 3) s.plan.stateSlots![0] = 5;
      return s;
    };
    await expect(ids(h)).rejects.toThrow(/recurrent-state slot 5, which holds no state/);
  });
});
