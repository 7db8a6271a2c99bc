/**
 * Log-probabilities of sampled tokens and of prompt tokens in Engine::step (CPU backend,
 * exact) against the float64 reference of testing/logprobsReference.ts: the rows, their
 * width and padding, prompt logprobs over chunks, and the attention role of an AFD split.
 */
import { buildStepPlan, type StepResult, type TokenLogprobs } from '@afd/shared';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Engine } from './engine.js';
import { logSoftmax, referenceRow, rowError, rowOf, type ReferenceRow } from './testing/logprobsReference.js';
import { fixturePrompt as prompt, fixtureSeq, logprobsFixture, type LogprobsFixture } from './testing/logprobsTesting.js';

let fx: LogprobsFixture;
beforeAll(async () => {
  fx = await logprobsFixture();
});
afterAll(async () => fx.close());

const rows = (l: TokenLogprobs): ReferenceRow[] => Array.from({ length: l.ranks.length }, (_, r) => rowOf(l, r));

describe('steps without extras', () => {
  it('return no logprobs fields', async () => {
    const out = await fx.engine.step(buildStepPlan([fixtureSeq(0)], { returnLogits: true }));
    expect(Object.keys(out).sort()).toEqual(['logits', 'stepTimeMs', 'tokenIds']);
  });
});

describe('log-probabilities of the sampled token', () => {
  it('top-k ids, values and ranks match the reference (k 20, temperature 0.8 and greedy)', async () => {
    for (const temperature of [0.8, 0]) {
      const out = await fx.engine.step(buildStepPlan([fixtureSeq(0, { logprobs: 20, sampling: { temperature, seed: 11 } })]));
      const l = out.logprobs!;
      expect(l.width).toBe(21);
      expect(Array.from(l.rowOffsets)).toEqual([0, 1]);
      const expected = referenceRow(logSoftmax(fx.raw, temperature), out.tokenIds[0]!, 20);
      expect(rowError(rowOf(l, 0), expected)).toBeLessThan(1e-5);
      expect(out.promptLogprobs).toBeUndefined();
    }
  });

  it('width is 1 + the largest k; smaller rows pad with -1 and NaN; a sequence without logprobs or not sampled has no row', async () => {
    const out = await fx.engine.step(
      buildStepPlan([
        fixtureSeq(0, { logprobs: 2 }),
        fixtureSeq(1),
        fixtureSeq(2, { logprobs: 5, sampling: { temperature: 1, seed: 4 } }),
        fixtureSeq(3, { logprobs: 0 }),
        fixtureSeq(4, { tokenIds: prompt.slice(0, 4), sample: false, logprobs: 3 }),
      ]),
    );
    const l = out.logprobs!;
    expect(l.width).toBe(6);
    expect(Array.from(l.rowOffsets)).toEqual([0, 1, 1, 2, 3, 3]);
    expect(Array.from(l.tokenIds.subarray(3, 6))).toEqual([-1, -1, -1]);
    expect(Array.from(l.logprobs.subarray(3, 6)).every(Number.isNaN)).toBe(true);
    expect(Array.from(l.tokenIds.subarray(13, 18))).toEqual([-1, -1, -1, -1, -1]);
    const ref = logSoftmax(fx.raw);
    const ks = [2, 5, 0];
    [0, 2, 3].forEach((s, r) => expect(rowError(rowOf(l, r), referenceRow(ref, out.tokenIds[s]!, ks[r]!))).toBeLessThan(1e-5));
  });
});

describe('prompt log-probabilities', () => {
  // Reference row t: the raw logits after prompt[0..t], targeting prompt[t + 1], top 3.
  async function referencePromptRows(engine: Engine): Promise<ReferenceRow[]> {
    const out: ReferenceRow[] = [];
    for (let t = 0; t + 1 < prompt.length; t++) {
      const step = await engine.step(buildStepPlan([fixtureSeq(9, { tokenIds: prompt.slice(0, t + 1) })], { returnLogits: true }));
      out.push(referenceRow(logSoftmax(step.logits!), prompt[t + 1]!, 3));
    }
    return out;
  }

  it('over a prompt in two chunks (nextPromptTokenIds) equal those of the whole prompt in one step, and the reference', async () => {
    const whole = await fx.engine.step(buildStepPlan([fixtureSeq(0, { promptLogprobs: 3, logprobs: 1 })]));
    expect(Array.from(whole.promptLogprobs!.rowOffsets)).toEqual([0, prompt.length - 1]);
    expect(whole.promptLogprobs!.width).toBe(4);
    // The sampled row (the prompt's last) is in logprobs, not promptLogprobs.
    expect(rowOf(whole.logprobs!, 0).ids[0]).toBe(whole.tokenIds[0]);
    const first = await fx.engine.step(
      buildStepPlan([fixtureSeq(1, { tokenIds: prompt.slice(0, 5), sample: false, promptLogprobs: 3, nextPromptTokenId: prompt[5] })]),
    );
    const second = await fx.engine.step(buildStepPlan([fixtureSeq(1, { tokenIds: prompt.slice(5), numCached: 5, promptLogprobs: 3 })]));
    expect(Array.from(first.promptLogprobs!.rowOffsets)).toEqual([0, 5]);
    expect(Array.from(second.promptLogprobs!.rowOffsets)).toEqual([0, 3]);
    const chunked = [...rows(first.promptLogprobs!), ...rows(second.promptLogprobs!)];
    const wholeRows = rows(whole.promptLogprobs!);
    chunked.forEach((row, t) => expect(rowError(row, wholeRows[t]!)).toBeLessThan(1e-6));
    const reference = await referencePromptRows(fx.engine);
    wholeRows.forEach((row, t) => expect(rowError(row, reference[t]!)).toBeLessThan(1e-5));
  });

  it('a chunk that does not sample and has no next token has one row less; sequences without them have none', async () => {
    const out = await fx.engine.step(
      buildStepPlan([
        fixtureSeq(0, { tokenIds: prompt.slice(0, 4), sample: false, promptLogprobs: 0 }),
        fixtureSeq(1, { tokenIds: prompt.slice(0, 6), sample: false }),
        fixtureSeq(2, { tokenIds: prompt.slice(0, 3), sample: false, promptLogprobs: 2, nextPromptTokenId: prompt[3] }),
      ]),
    );
    expect(out.logprobs).toBeUndefined();
    const l = out.promptLogprobs!;
    expect(Array.from(l.rowOffsets)).toEqual([0, 3, 3, 6]);
    expect(l.width).toBe(3);
    expect(rows(l).map((r) => r.ids[0])).toEqual([17, 5, 9, 17, 5, 9]);
    expect(Array.from(l.tokenIds.subarray(1, 3))).toEqual([-1, -1]);
  });
});

describe('the attention role of an AFD split', () => {
  it('an attention engine with its FFN engine attached returns the same logprobs and prompt logprobs as colocated', async () => {
    const attention = await fx.load({ role: 'attention' });
    const ffn = await fx.load({ role: 'ffn' });
    attention.attachFfn(ffn);
    const plan = () =>
      buildStepPlan([
        fixtureSeq(0, { promptLogprobs: 4, logprobs: 6, sampling: { temperature: 0.7, seed: 2, minP: 0.05 } }),
        fixtureSeq(1, { logitBias: new Map([[4, 3]]), penalties: { presence: 0.5, frequency: 0.5, repetition: 1.1, seen: new Map([[17, 1]]) }, logprobs: 2 }),
      ]);
    const strip = ({ stepTimeMs: _t, ...rest }: StepResult) => rest;
    expect(strip(await attention.step(plan()))).toEqual(strip(await fx.engine.step(plan())));
  });
});
