/**
 * The allowed-token mask in Engine::step (CPU backend, exact; structured outputs): given
 * with the plan or deferred (engine.provideTokenMask while the step runs), against the
 * float64 reference of testing/logprobsReference.ts over the raw logits of the fixture.
 */
import { buildStepPlan, maskWordsPerRow, type PlanSeq } from '@afd/shared';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Engine, nativeEngineOf } from './engine.js';
import { roleSpec } from './testing/engineTesting.js';
import { addonForBackend } from './testing/testingAddon.js';
import { logSoftmax, maskAllows, maskRowOf, processLogits, referenceRow, rowError, rowOf } from './testing/logprobsReference.js';
import { byLogit, fixtureSeq, logprobsFixture, type LogprobsFixture } from './testing/logprobsTesting.js';

let fx: LogprobsFixture;
let V = 0;
beforeAll(async () => {
  fx = await logprobsFixture();
  V = fx.raw.length;
});
afterAll(async () => fx.close());

const seeds = Array.from({ length: 10 }, (_, i) => 500 + 13 * i);
/** Rows of a mask, one after another. */
const rowsOf = (...rows: Int32Array[]): Int32Array => Int32Array.from(rows.flatMap((r) => Array.from(r)));
/** Tokens of middling raw logit: neither the most likely nor the least (so the mask changes the outcome). */
const middle = (): number[] => byLogit(fx.raw).slice(10, 16);

/** A step whose sequence promises to settle within `ms`: 'pending' when it has not. */
async function settledWithin(p: Promise<unknown>, ms: number): Promise<'settled' | 'pending'> {
  const timer = new Promise<'pending'>((resolve) => setTimeout(() => resolve('pending'), ms));
  return Promise.race([p.then(() => 'settled' as const, () => 'settled' as const), timer]);
}

describe('a token mask given with the plan', () => {
  it('greedy picks the most likely allowed token; seeded sampling (plain, top-k, top-p, min-p) only allowed ones', async () => {
    const allowed = middle();
    const mask = maskRowOf(allowed, V);
    const greedy = await fx.engine.step(buildStepPlan([fixtureSeq(0, { constrained: true })], { tokenMask: mask }));
    expect(greedy.tokenIds[0]).toBe(allowed[0]);
    for (const sampling of [{}, { topK: 3 }, { topP: 0.5 }, { minP: 0.2 }, { temperature: 3 }]) {
      const seqs = seeds.map((seed, i) => fixtureSeq(i, { constrained: true, sampling: { temperature: 1, ...sampling, seed } }));
      const out = await fx.engine.step(buildStepPlan(seqs, { tokenMask: rowsOf(...seeds.map(() => mask)) }));
      for (const t of out.tokenIds) expect(allowed).toContain(t);
    }
    // Without the mask the same seeds draw tokens outside it: the mask is what kept them in.
    const free = await fx.engine.step(buildStepPlan(seeds.map((seed, i) => fixtureSeq(i, { sampling: { temperature: 3, seed } }))));
    expect(Array.from(free.tokenIds).some((t) => !allowed.includes(t))).toBe(true);
  });

  it('log-probabilities are those of the masked row: banned tokens are -Infinity and come after every allowed one', async () => {
    const allowed = middle();
    const mask = maskRowOf(allowed, V);
    const out = await fx.engine.step(
      buildStepPlan([fixtureSeq(0, { constrained: true, logprobs: 5, sampling: { temperature: 0.7, seed: 9 } })], { tokenMask: mask, returnLogits: true }),
    );
    const processed = processLogits(fx.raw, { mask });
    expect(rowError(rowOf(out.logprobs!, 0), referenceRow(logSoftmax(processed, 0.7), out.tokenIds[0]!, 5))).toBeLessThan(1e-5);
    for (let t = 0; t < V; t++) expect(out.logits![t]).toBe(maskAllows(mask, t) ? fx.raw[t] : -Infinity);
    // k beyond the allowed tokens: the allowed ones by value, then banned ones at -Infinity.
    const wide = await fx.engine.step(buildStepPlan([fixtureSeq(0, { constrained: true, logprobs: 10 })], { tokenMask: mask }));
    const row = rowOf(wide.logprobs!, 0);
    expect(row.ids.slice(1, 7)).toEqual(allowed);
    expect(row.values.slice(7)).toEqual([-Infinity, -Infinity, -Infinity, -Infinity]);
    expect(row.rank).toBe(1);
  });

  it('with bias and penalties (on allowed and banned tokens) gives the reference row: banned tokens stay -Infinity', async () => {
    const order = byLogit(fx.raw);
    const allowed = order.filter((_, i) => i % 3 === 1);
    const banned = order.filter((_, i) => i % 3 !== 1);
    const mask = maskRowOf(allowed, V);
    const bias = new Map([[allowed[4]!, 3], [allowed[2]!, -1.5], [banned[0]!, 50], [banned[1]!, 4]]);
    const seen = new Map([[allowed[0]!, 2], [allowed[1]!, 0], [allowed[4]!, 1], [banned[2]!, 3], [banned.at(-1)!, 0]]);
    const penalties = { presence: 0.4, frequency: 0.3, repetition: 1.3, seen };
    const seq = (i: number, extra: Partial<PlanSeq>): PlanSeq =>
      fixtureSeq(i, { constrained: true, logitBias: bias, penalties, logprobs: 8, sampling: { temperature: 0.9, seed: 4 }, ...extra });
    const out = await fx.engine.step(buildStepPlan([seq(0, {}), seq(1, { constrained: false })], { tokenMask: mask, returnLogits: true }));
    const expected = processLogits(fx.raw, { mask, bias, penalties });
    const got = out.logits!.subarray(0, V);
    for (let t = 0; t < V; t++) {
      if (Number.isFinite(expected[t]!)) expect(got[t]).toBeCloseTo(expected[t]!, 5);
      else expect(got[t]).toBe(expected[t]);
    }
    expect(allowed).toContain(out.tokenIds[0]);
    expect(rowError(rowOf(out.logprobs!, 0), referenceRow(logSoftmax(expected, 0.9), out.tokenIds[0]!, 8))).toBeLessThan(1e-5);
    // The unconstrained sequence of the batch gets its bias and penalties without the mask.
    const unmasked = processLogits(fx.raw, { bias, penalties });
    expect(out.logits![V + banned[1]!]).toBeCloseTo(unmasked[banned[1]!]!, 5);
    expect(out.logits![V + banned[0]!]).toBeCloseTo(fx.raw[banned[0]!]! + 50, 4);
    expect(out.tokenIds[1]).toBe(banned[0]);
  });

  it('a batch mixing a masked and a plain sequence leaves the plain one as it is alone', async () => {
    const alone = await fx.engine.step(buildStepPlan([fixtureSeq(0, { sampling: { temperature: 0.9, seed: 8 } })], { returnLogits: true }));
    const mask = maskRowOf(middle(), V);
    const mixed = await fx.engine.step(
      buildStepPlan([fixtureSeq(1, { constrained: true }), fixtureSeq(0, { sampling: { temperature: 0.9, seed: 8 } })], {
        tokenMask: mask,
        returnLogits: true,
      }),
    );
    expect(mixed.tokenIds[1]).toBe(alone.tokenIds[0]);
    expect(mixed.logits!.subarray(V)).toEqual(alone.logits);
    expect(mixed.tokenIds[0]).toBe(middle()[0]);
  });
});

describe('a deferred token mask (provideTokenMask)', () => {
  it('the step waits for it, then samples under it; two rows map to their sequences by maskRows', async () => {
    const a = middle();
    const b = byLogit(fx.raw).slice(20, 23);
    const p = fx.engine.step(buildStepPlan([fixtureSeq(0, { constrained: true }), fixtureSeq(1), fixtureSeq(2, { constrained: true })]));
    expect(await settledWithin(p, 300)).toBe('pending');
    fx.engine.provideTokenMask(rowsOf(maskRowOf(a, V), maskRowOf(b, V)));
    const out = await p;
    expect([out.tokenIds[0], out.tokenIds[2]]).toEqual([a[0], b[0]]);
    expect(out.tokenIds[1]).toBe(byLogit(fx.raw)[0]);
  });

  it('equals the same mask given with the plan, logprobs included; provided right after step() it needs no wait', async () => {
    const mask = maskRowOf(middle(), V);
    const seq = fixtureSeq(0, { constrained: true, logprobs: 4, sampling: { temperature: 1.2, seed: 77 } });
    const given = await fx.engine.step(buildStepPlan([seq], { tokenMask: mask }));
    const p = fx.engine.step(buildStepPlan([seq]));
    fx.engine.provideTokenMask(mask);
    const { stepTimeMs: _a, ...deferred } = await p;
    const { stepTimeMs: _b, ...direct } = given;
    expect(deferred).toEqual(direct);
  });

  it('a withdrawn mask fails the step with "token mask withdrawn"; the engine works after', async () => {
    const p = fx.engine.step(buildStepPlan([fixtureSeq(0, { constrained: true })]));
    fx.engine.provideTokenMask(null);
    await expect(p).rejects.toThrow(/^token mask withdrawn$/);
    const plain = await fx.engine.step(buildStepPlan([fixtureSeq(0)]));
    expect(plain.tokenIds[0]).toBe(byLogit(fx.raw)[0]);
    const q = fx.engine.step(buildStepPlan([fixtureSeq(0, { constrained: true })]));
    fx.engine.provideTokenMask(maskRowOf([7], V));
    expect((await q).tokenIds[0]).toBe(7);
  });

  it('a mask of the wrong length fails its step naming the expected length; an empty row fails too', async () => {
    const words = maskWordsPerRow(V);
    const p = fx.engine.step(buildStepPlan([fixtureSeq(0, { constrained: true }), fixtureSeq(1, { constrained: true })]));
    fx.engine.provideTokenMask(new Int32Array(words).fill(-1));
    await expect(p).rejects.toThrow(`token mask: provideTokenMask gave ${words} int32 words, expected 2 mask rows x ${words} words (ceil(vocabSize / 32)) = ${2 * words}`);
    const q = fx.engine.step(buildStepPlan([fixtureSeq(0, { constrained: true })]));
    fx.engine.provideTokenMask(new Int32Array(words));
    await expect(q).rejects.toThrow(/token mask: row 0 allows no token of the vocabulary \[0, 64\)/);
    expect((await fx.engine.step(buildStepPlan([fixtureSeq(0)]))).tokenIds[0]).toBe(byLogit(fx.raw)[0]);
  });

  it('provideTokenMask without a waiting step throws; a mask for a step the plan check refused is dropped, the next step gets its own', async () => {
    expect(() => fx.engine.provideTokenMask(maskRowOf([1], V))).toThrow(/no step waits for a token mask/);
    expect(() => fx.engine.provideTokenMask([1, 2] as unknown as Int32Array)).toThrow(/must be an Int32Array/);
    const bad = buildStepPlan([fixtureSeq(0, { constrained: true })]);
    bad.extras!.maskRows[0] = 3;
    const refused = fx.engine.step(bad);
    const good = fx.engine.step(buildStepPlan([fixtureSeq(1, { constrained: true })]));
    fx.engine.provideTokenMask(maskRowOf([1], V)); // for the refused step: dropped
    fx.engine.provideTokenMask(maskRowOf([2], V));
    await expect(refused).rejects.toThrow(/extras\.maskRows\[0\] is 3; expected -1 \(none\) or a row in \[0, 1\)/);
    expect((await good).tokenIds[0]).toBe(2);
    // The raw addon pairs the same way: a step its C++ guard refuses drops its mask.
    const native = nativeEngineOf(fx.engine);
    const refusedNative = native.step(bad);
    const goodNative = native.step(buildStepPlan([fixtureSeq(1, { constrained: true })]));
    native.provideTokenMask(maskRowOf([1], V));
    native.provideTokenMask(maskRowOf([3], V));
    await expect(refusedNative).rejects.toThrow(/step plan: extras\.maskRows\[0\] is 3; expected -1 \(none\) or a row in \[0, 1\)/);
    expect((await goodNative).tokenIds[0]).toBe(3);
  });

  it("a step whose lists' contents the C++ check refuses (past Engine.step's shape check) drops its mask too; the next step gets its own", async () => {
    const bad = buildStepPlan([fixtureSeq(0, { constrained: true, logitBias: new Map([[1, 1], [2, 1]]) })]);
    bad.extras!.biasTokenIds[1] = 1;
    const refused = fx.engine.step(bad);
    const good = fx.engine.step(buildStepPlan([fixtureSeq(1, { constrained: true })]));
    fx.engine.provideTokenMask(maskRowOf([1], V)); // for the refused step: dropped
    fx.engine.provideTokenMask(maskRowOf([4], V));
    await expect(refused).rejects.toThrow('step plan: extras.biasTokenIds of sequence 0 list token 1 twice');
    expect((await good).tokenIds[0]).toBe(4);
  });

  it('closing the engine fails a step waiting for its mask', async () => {
    const engine = await fx.load({});
    const p = engine.step(buildStepPlan([fixtureSeq(0, { constrained: true })]));
    expect(await settledWithin(p, 200)).toBe('pending');
    engine.close();
    await expect(p).rejects.toThrow(/token mask withdrawn: the engine was closed/);
  });
});

describe('decode steps under CUDA graphs (backend cpu-graphs: capture emulated)', () => {
  it('a step whose only extra is a deferred mask replays its graph, then samples under the mask, as the eager engine does', async () => {
    const spec = await roleSpec(fx.dir, 'colocated');
    const opts = { backend: 'cpu-graphs', threads: 1, numKvBlocks: 31, kvBlockSize: 4 };
    const addon = addonForBackend('cpu-graphs');
    const engines = [
      await Engine.loadWith(addon, spec, { ...opts, graphPolicy: 'off' }),
      await Engine.loadWith(addon, spec, { ...opts, graphPolicy: 'decode-only', graphBatchBuckets: [1, 2, 4] }),
    ];
    try {
      const runs: number[][] = [];
      for (const engine of engines) {
        const tokens: number[] = [];
        let last = (await engine.step(buildStepPlan([fixtureSeq(0)]))).tokenIds[0]!;
        for (let i = 0; i < 5; i++) {
          const allowed = [(11 * i + 5) % V, (11 * i + 30) % V, (7 * i + 50) % V];
          const seq: PlanSeq = { tokenIds: [last], numCached: 9 + i, blockTable: [0, 1, 2, 3], constrained: true };
          const p = engine.step(buildStepPlan([seq]));
          engine.provideTokenMask(maskRowOf(allowed, V));
          last = (await p).tokenIds[0]!;
          expect(allowed).toContain(last);
          tokens.push(last);
        }
        runs.push(tokens);
      }
      expect(runs[1]).toEqual(runs[0]);
      expect(engines[1]!.stats().graphHits).toBeGreaterThan(0);
    } finally {
      engines.forEach((e) => e.close());
    }
  });
});

describe('the C++ guard behind the TypeScript check', () => {
  it('refuses a mask row used twice, on an unsampled sequence, and a given mask of the wrong length', async () => {
    const native = nativeEngineOf(fx.engine);
    const words = maskWordsPerRow(V);
    const twice = buildStepPlan([fixtureSeq(0, { constrained: true }), fixtureSeq(1, { constrained: true })], { tokenMask: new Int32Array(2 * words).fill(-1) });
    twice.extras!.maskRows[1] = 0;
    await expect(native.step(twice)).rejects.toThrow(/extras\.maskRows\[1\] is 0, a row another sequence uses/);
    const unsampled = buildStepPlan([fixtureSeq(0, { constrained: true, sample: false })], { tokenMask: new Int32Array(words).fill(-1) });
    await expect(native.step(unsampled)).rejects.toThrow(/extras\.maskRows\[0\] is 0 but sequence 0 samples no token/);
    const short = buildStepPlan([fixtureSeq(0, { constrained: true })], { tokenMask: new Int32Array(words - 1).fill(-1) });
    await expect(native.step(short)).rejects.toThrow(`extras.tokenMask has ${words - 1} words, expected 1 rows x ${words} words (ceil(vocabSize 64 / 32)) = ${words}`);
    await expect(fx.engine.step(short)).rejects.toThrow(/invalid StepPlan: extras\.tokenMask has 1 words/);
    const noRows = buildStepPlan([fixtureSeq(0, { logprobs: 0 })]);
    (noRows.extras as { maskRows?: Int32Array }).maskRows = undefined;
    await expect(native.step(noRows)).rejects.toThrow(/plan\.extras\.maskRows/);
  });
});
