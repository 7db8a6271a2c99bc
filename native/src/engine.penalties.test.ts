/**
 * Logit bias, penalties and min-p in Engine::step (CPU backend, exact): each against the
 * float64 reference of testing/logprobsReference.ts over the raw logits the engine
 * returns for the same prompt without extras.
 */
import { buildStepPlan, type PlanPenalties, type PlanSeq, type StepExtras, type StepPlan } from '@afd/shared';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nativeEngineOf } from './engine.js';
import { logSoftmax, processLogits, referenceRow, rowError, rowOf } from './testing/logprobsReference.js';
import { byLogit, fixtureSeq, logprobsFixture, type LogprobsFixture } from './testing/logprobsTesting.js';

let fx: LogprobsFixture;
beforeAll(async () => {
  fx = await logprobsFixture();
});
afterAll(async () => fx.close());

const seeds = Array.from({ length: 10 }, (_, i) => 1000 + 7 * i);

/** One step of 10 sequences, sequence i seeded with seeds[i], each with `extra`. */
async function sampleTen(extra: Partial<PlanSeq>): Promise<number[]> {
  const plan = buildStepPlan(seeds.map((seed, i) => fixtureSeq(i, { ...extra, sampling: { temperature: 1, ...extra.sampling, seed } })));
  return Array.from((await fx.engine.step(plan)).tokenIds);
}

describe('logit bias', () => {
  it('+100 on the least likely token makes it the sampled token at temperature 1, with log-probability ~0 and rank 1', async () => {
    const target = byLogit(fx.raw).at(-1)!;
    const tokens = await sampleTen({ logitBias: new Map([[target, 100]]), logprobs: 0 });
    expect(tokens).toEqual(seeds.map(() => target));
    const out = await fx.engine.step(buildStepPlan([fixtureSeq(0, { logitBias: new Map([[target, 100]]), logprobs: 0, sampling: { temperature: 1, seed: 5 } })]));
    const row = rowOf(out.logprobs!, 0);
    expect(row.ids).toEqual([target]);
    expect(row.values[0]).toBeGreaterThan(-1e-6);
    expect(row.rank).toBe(1);
  });

  it('a -Infinity ban is never sampled, not even greedily; the banned tokens drop out of the top log-probabilities', async () => {
    const order = byLogit(fx.raw);
    const banned = order.slice(0, Math.floor(order.length / 2));
    const bias = new Map(banned.map((id) => [id, -Infinity]));
    for (const temperature of [1, 2]) {
      const tokens = await sampleTen({ logitBias: bias, sampling: { temperature, topK: 0, topP: 1 } });
      for (const t of tokens) expect(banned).not.toContain(t);
    }
    const greedy = await fx.engine.step(buildStepPlan([fixtureSeq(0, { logitBias: bias, logprobs: 5 })]));
    const allowed = order[banned.length]!;
    expect(greedy.tokenIds[0]).toBe(allowed);
    const row = rowOf(greedy.logprobs!, 0);
    expect(row.ids.slice(1)).toEqual(order.slice(banned.length, banned.length + 5));
    expect(rowError(row, referenceRow(logSoftmax(processLogits(fx.raw, { bias })), allowed, 5))).toBeLessThan(1e-5);
  });
});

describe('penalties', () => {
  // Tokens seen: three of positive and three of negative raw logit, output counts 0 (prompt only) to 3.
  const seenOf = (raw: Float32Array): Map<number, number> => {
    const pos = Array.from(raw.keys()).filter((i) => raw[i]! > 0.05);
    const neg = Array.from(raw.keys()).filter((i) => raw[i]! < -0.05);
    return new Map([[pos[0]!, 0], [pos[1]!, 1], [pos[2]!, 3], [neg[0]!, 0], [neg[1]!, 2], [neg[2]!, 1]]);
  };
  const cases: [string, Omit<PlanPenalties, 'seen'>, number][] = [
    ['presence', { presence: 0.8, frequency: 0, repetition: 1 }, 1],
    ['frequency', { presence: 0, frequency: 0.6, repetition: 1 }, 0.7],
    ['repetition', { presence: 0, frequency: 0, repetition: 1.7 }, 0],
    ['all three', { presence: 0.5, frequency: 0.5, repetition: 1.3 }, 1.3],
  ];
  it.each(cases)('%s changes the log-probabilities exactly as the rule says', async (_name, p, temperature) => {
    const penalties = { ...p, seen: seenOf(fx.raw) };
    const out = await fx.engine.step(buildStepPlan([fixtureSeq(0, { penalties, logprobs: 20, sampling: { temperature, seed: 3 } })]));
    const chosen = out.tokenIds[0]!;
    const processed = processLogits(fx.raw, { penalties });
    const expected = referenceRow(logSoftmax(processed, temperature), chosen, 20);
    expect(rowError(rowOf(out.logprobs!, 0), expected)).toBeLessThan(1e-4);
    // The rule moved something the test can see: a seen token's log-probability differs from the plain one.
    const plain = logSoftmax(fx.raw, temperature);
    const moved = Math.max(...[...penalties.seen.keys()].map((id) => Math.abs(logSoftmax(processed, temperature)[id]! - plain[id]!)));
    expect(moved).toBeGreaterThan(1e-2);
  });

  it('bias comes before the repetition penalty, and the returned logits are the processed ones', async () => {
    const [id] = byLogit(fx.raw);
    const bias = new Map([[id!, 2]]);
    const penalties = { presence: 0, frequency: 0, repetition: 2, seen: new Map([[id!, 0]]) };
    const out = await fx.engine.step(buildStepPlan([fixtureSeq(0, { logitBias: bias, penalties })], { returnLogits: true }));
    expect(out.logits![id!]).toBeCloseTo((fx.raw[id!]! + 2) / 2, 5);
  });
});

describe('min-p', () => {
  it('keeps only the tokens with p >= minP * pmax; log-probabilities stay those of the whole distribution', async () => {
    const order = byLogit(fx.raw);
    const p = Array.from(logSoftmax(fx.raw), Math.exp);
    const ratio = (i: number): number => p[order[i]!]! / p[order[0]!]!;
    const minP = (ratio(1) + ratio(2)) / 2; // keeps exactly the two most likely
    const kept = await sampleTen({ sampling: { temperature: 1, minP }, logprobs: 3 });
    for (const t of kept) expect(order.slice(0, 2)).toContain(t);
    const free = await sampleTen({ sampling: { temperature: 1 } });
    expect(free.some((t) => !order.slice(0, 2).includes(t))).toBe(true);
    const out = await fx.engine.step(buildStepPlan([fixtureSeq(0, { sampling: { temperature: 1, minP, seed: 1 }, logprobs: 3 })]));
    expect(rowError(rowOf(out.logprobs!, 0), referenceRow(logSoftmax(fx.raw), out.tokenIds[0]!, 3))).toBeLessThan(1e-5);
  });
});

describe('a batch mixing sequences with and without extras', () => {
  it("leaves the plain sequence's token and logits as they are alone; the other gets its bias", async () => {
    const alone = await fx.engine.step(buildStepPlan([fixtureSeq(0, { sampling: { temperature: 0.9, seed: 8 } })], { returnLogits: true }));
    const target = byLogit(fx.raw).at(-1)!;
    const mixed = await fx.engine.step(
      buildStepPlan(
        [
          fixtureSeq(0, { sampling: { temperature: 0.9, seed: 8 } }),
          fixtureSeq(1, { logitBias: new Map([[target, 100]]), penalties: { presence: 1, frequency: 1, repetition: 1.2, seen: new Map([[3, 1]]) }, logprobs: 2 }),
        ],
        { returnLogits: true },
      ),
    );
    const V = fx.raw.length;
    expect(mixed.tokenIds[0]).toBe(alone.tokenIds[0]);
    expect(mixed.logits!.subarray(0, V)).toEqual(alone.logits);
    expect(mixed.tokenIds[1]).toBe(target);
    expect(Array.from(mixed.logprobs!.rowOffsets)).toEqual([0, 0, 1]);
  });
});

describe("the lists' contents: Engine.step leaves them to the C++ check", () => {
  it('refuses a seen token listed twice, an id outside the vocabulary, a negative count and a NaN bias, naming the field; the engine works after', async () => {
    const V = fx.raw.length;
    const penalties = { presence: 0.5, frequency: 0.5, repetition: 1.1, seen: new Map([[3, 1], [4, 0], [5, 2]]) };
    const planOf = (mutate: (x: StepExtras) => void): StepPlan => {
      const plan = buildStepPlan([fixtureSeq(0), fixtureSeq(1, { penalties, logitBias: new Map([[7, 1], [8, -1]]) })]);
      mutate(plan.extras!);
      return plan;
    };
    const refusals: [(x: StepExtras) => void, string][] = [
      [(x) => (x.seenTokenIds[2] = 3), 'step plan: extras.seenTokenIds of sequence 1 list token 3 twice; expected distinct ids'],
      [(x) => (x.biasTokenIds[1] = V), `step plan: extras.biasTokenIds[1] is ${V}, outside the vocabulary [0, ${V})`],
      [(x) => (x.seenCounts[1] = -1), 'step plan: extras.seenCounts[1] is -1; expected >= 0'],
      [(x) => (x.biasValues[0] = NaN), 'step plan: extras.biasValues[0] is NaN'],
    ];
    for (const [mutate, message] of refusals) await expect(fx.engine.step(planOf(mutate))).rejects.toThrow(message);
    expect((await fx.engine.step(planOf(() => {}))).tokenIds).toHaveLength(2);
  });
});

describe('the C++ guard behind the TypeScript check', () => {
  it('refuses a token listed twice in one sequence, and a min-p outside [0, 1], naming the field', async () => {
    const native = nativeEngineOf(fx.engine);
    const twice = buildStepPlan([fixtureSeq(0, { logitBias: new Map([[1, 1], [2, 1]]) })]);
    twice.extras!.biasTokenIds[1] = 1;
    await expect(native.step(twice)).rejects.toThrow(/extras\.biasTokenIds of sequence 0 list token 1 twice/);
    const minP = buildStepPlan([fixtureSeq(0)]);
    minP.minP[0] = 1.5;
    await expect(native.step(minP)).rejects.toThrow(/minP\[0\] is 1\.5; expected \[0, 1\]/);
    const short = buildStepPlan([fixtureSeq(0, { logprobs: 1 })]);
    short.extras!.numLogprobs = new Int32Array(0);
    await expect(native.step(short)).rejects.toThrow(/plan\.extras\.numLogprobs has 0 elements, expected 1/);
  });
});
