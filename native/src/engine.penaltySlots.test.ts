/**
 * Penalty slots in Engine::step (CPU backend, exact): a sequence's seen tokens written once
 * into the backend's table (a seed), then counted by the sampler, give the same processed
 * logits, step after step, as the whole seen list sent with every step; and the plan checks
 * (TypeScript and the C++ guard) refuse slots used wrongly, naming the field.
 */
import { buildStepPlan, type PlanSeq, type StepPlan } from '@afd/shared';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nativeEngineOf } from './engine.js';
import { byLogit, fixtureSeq, logprobsFixture, type LogprobsFixture } from './testing/logprobsTesting.js';

let fx: LogprobsFixture;
beforeAll(async () => {
  fx = await logprobsFixture();
});
afterAll(async () => fx.close());

interface Case {
  penalties: { presence: number; frequency: number; repetition: number };
  seen: Map<number, number>;
  slot: number;
  seed: number;
}

/** The plan of one step: each case as the fixture's prompt, sampled at temperature 1. */
function planOf(cases: Case[], slots: { seed: boolean } | null, sample: boolean[] = cases.map(() => true)): StepPlan {
  const seqs: PlanSeq[] = cases.map((c, i) => ({
    ...fixtureSeq(i),
    sample: sample[i]!,
    sampling: { temperature: 1, seed: c.seed },
    penalties: { ...c.penalties, seen: slots === null || slots.seed ? new Map(c.seen) : new Map(), ...(slots ? { slot: { id: c.slot, seed: slots.seed } } : {}) },
  }));
  return buildStepPlan(seqs, { returnLogits: true });
}

describe('penalty slots', () => {
  it('seeded once and counted by the sampler, they give the logits and tokens of lists sent every step (5 steps, 2 sequences)', async () => {
    const order = byLogit(fx.raw);
    // A prompt-only token, an output token counted twice, and the likeliest tokens (sampled, so their counts grow).
    const cases: Case[] = [
      { penalties: { presence: 0.4, frequency: 0.3, repetition: 1.2 }, seen: new Map([[order[5]!, 0], [order[9]!, 2]]), slot: 7, seed: 11 },
      { penalties: { presence: 0, frequency: 0.8, repetition: 1 }, seen: new Map([[order[3]!, 1]]), slot: 0, seed: 12 },
    ];
    const slotted = await fx.load({});
    const listed = await fx.load({});
    const V = fx.raw.length;
    const sampled: number[][] = [[], []];
    for (let step = 0; step < 5; step++) {
      const a = await slotted.step(planOf(cases, { seed: step === 0 }));
      const b = await listed.step(planOf(cases, null));
      expect(Array.from(a.tokenIds)).toEqual(Array.from(b.tokenIds));
      expect(a.logits).toEqual(b.logits);
      cases.forEach((c, i) => {
        const t = a.tokenIds[i]!;
        sampled[i]!.push(t);
        c.seen.set(t, (c.seen.get(t) ?? 0) + 1); // what the host used to count, for the list engine
      });
      // The penalties act on the slotted rows: a counted token's logit is not the raw one.
      const moved = cases.map((c, i) => Math.max(...[...c.seen.keys()].map((id) => Math.abs(a.logits![i * V + id]! - fx.raw[id]!))));
      moved.forEach((m) => expect(m).toBeGreaterThan(1e-3));
    }
    // Temperature 1 with the penalties moved the draws between tokens at least once.
    expect(sampled.some((ts) => new Set(ts).size > 1) || sampled[0]!.join() !== sampled[1]!.join()).toBe(true);
  });

  it('a seed on a prompt chunk that samples nothing is kept for the step that samples', async () => {
    const order = byLogit(fx.raw);
    const c: Case = { penalties: { presence: 1, frequency: 0.5, repetition: 1.5 }, seen: new Map([[order[0]!, 0], [order[1]!, 3]]), slot: 3, seed: 5 };
    const slotted = await fx.load({});
    const listed = await fx.load({});
    await slotted.step(planOf([c], { seed: true }, [false]));
    const a = await slotted.step(planOf([c], { seed: false }));
    const b = await listed.step(planOf([c], null));
    expect(a.logits).toEqual(b.logits);
    expect(a.tokenIds[0]).toBe(b.tokenIds[0]);
  });

  it('a seed clears what the slot held before (a slot handed to another sequence)', async () => {
    const order = byLogit(fx.raw);
    const engine = await fx.load({});
    const first: Case = { penalties: { presence: 2, frequency: 2, repetition: 2 }, seen: new Map([[order[0]!, 4], [order[2]!, 1]]), slot: 1, seed: 2 };
    await engine.step(planOf([first], { seed: true }));
    const next: Case = { penalties: { presence: 0.5, frequency: 0.5, repetition: 1 }, seen: new Map([[order[7]!, 1]]), slot: 1, seed: 3 };
    const a = await engine.step(planOf([next], { seed: true }));
    const b = await (await fx.load({})).step(planOf([next], null));
    expect(a.logits).toEqual(b.logits);
  });

  it('refuses a slot given twice, a seed without a slot, a list beside an unseeded slot, and a slot never seeded; the engine works after', async () => {
    const engine = await fx.load({});
    const seen = new Map([[3, 1]]);
    const pen = (slot: number, seed: boolean): Partial<PlanSeq> => ({ penalties: { presence: 0.5, frequency: 0, repetition: 1, seen: seed ? seen : new Map(), slot: { id: slot, seed } } });
    const two = buildStepPlan([fixtureSeq(0, pen(4, true)), fixtureSeq(1, pen(4, true))]);
    await expect(engine.step(two)).rejects.toThrow(/extras\.penaltySlots gives slot 4 to sequences 0 and 1/);
    const noSlot = buildStepPlan([fixtureSeq(0, pen(4, true))]);
    noSlot.extras!.penaltySlots![0] = -1;
    await expect(engine.step(noSlot)).rejects.toThrow(/penaltySlotSeeds\[0\] is 1 but sequence 0 has no penalty slot/);
    const listedUnseeded = buildStepPlan([fixtureSeq(0, pen(4, true))]);
    listedUnseeded.extras!.penaltySlotSeeds![0] = 0;
    await expect(engine.step(listedUnseeded)).rejects.toThrow(/reads penalty slot 4 \(penaltySlotSeeds 0\) and also sends 1 seen tokens/);
    // The C++ guard says the same where the TypeScript check is bypassed.
    await expect(nativeEngineOf(engine).step(two)).rejects.toThrow(/extras\.penaltySlots gives slot 4 to two sequences/);
    await expect(engine.step(buildStepPlan([fixtureSeq(0, pen(9000, false))]))).rejects.toThrow(/slot 9000.*seed a slot before a step reads it/);
    expect((await engine.step(buildStepPlan([fixtureSeq(0, pen(2, true))]))).tokenIds).toHaveLength(1);
  });
});
