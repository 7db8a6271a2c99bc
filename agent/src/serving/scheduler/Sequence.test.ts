import { describe, expect, it } from 'vitest';
import { SeenTokens } from '@afd/shared';
import { Sequence, type SeqLogitOptions, type StopParams } from './Sequence.js';

const greedy = { temperature: 0, topK: 0, topP: 1, seed: 1 };
const stop: StopParams = { maxTokens: 10, eosTokenIds: [99], stopTokenIds: [], ignoreEos: false };
const make = (logits: SeqLogitOptions = {}, over: Partial<StopParams> = {}, prompt = [1, 2, 2, 3]): Sequence => new Sequence('s', prompt, greedy, { ...stop, ...over }, 0, logits);

describe('Sequence: penalties seed a penalty slot once', () => {
  it('asks for no penalties when they are off or neutral', () => {
    expect(make().planFields(1, true)).toEqual({ sampling: greedy });
    expect(make({ penalties: { presence: 0, frequency: 0, repetition: 1 } }).planFields(1, true).penalties).toBeUndefined();
  });

  it('refuses to plan penalties without a slot (the scheduler hands them out)', () => {
    expect(() => make({ penalties: { presence: 0.5, frequency: 0, repetition: 1 } }).planFields(1, true)).toThrow(/holds no penalty slot/);
  });

  it('seeds with output counts only for presence/frequency, prompt tokens as 0 with a repetition penalty, then sends nothing', () => {
    const freq = make({ penalties: { presence: 0.5, frequency: 1, repetition: 1 } });
    freq.penaltySlot = 3;
    for (const t of [7, 2, 7]) freq.appendOutput(t);
    const p = freq.planFields(1, true).penalties!;
    expect({ ...p, seen: new Map(p.seen) }).toEqual({ presence: 0.5, frequency: 1, repetition: 1, seen: new Map([[7, 2], [2, 1]]), slot: { id: 3, seed: true } });
    // The same entries in the typed arrays buildStepExtras copies (insertion order).
    expect(p.seen).toBeInstanceOf(SeenTokens);
    expect([...(p.seen as SeenTokens).ids()]).toEqual([7, 2]);
    expect([...(p.seen as SeenTokens).counts()]).toEqual([2, 1]);
    // Once seeded the slot holds the counts (the sampler adds each token on the device).
    freq.penaltySlotSeeded = true;
    freq.appendOutput(9);
    const later = freq.planFields(1, true).penalties!;
    expect(later.slot).toEqual({ id: 3, seed: false });
    expect(later.seen.size).toBe(0);

    const rep = make({ penalties: { presence: 0, frequency: 0, repetition: 1.2 } });
    rep.penaltySlot = 0;
    rep.appendOutput(3);
    rep.appendOutput(8);
    expect(new Map(rep.planFields(1, true).penalties!.seen)).toEqual(new Map([[1, 0], [2, 0], [3, 1], [8, 1]]));
  });
});

describe('Sequence: min_tokens', () => {
  it('bans EOS and the stop ids with -Infinity while fewer than min_tokens were generated, on top of logit_bias', () => {
    const s = make({ logitBias: new Map([[5, 2]]) }, { minTokens: 2, stopTokenIds: [42] });
    expect(s.planFields(1, true).logitBias).toEqual(new Map([[5, 2], [99, -Infinity], [42, -Infinity]]));
    s.appendOutput(99); // an engine that ignored the ban: still not the end
    expect(s.stopsOnLastToken()).toBe(false);
    expect(s.planFields(1, true).logitBias!.get(99)).toBe(-Infinity);
    s.appendOutput(42); // the 2nd token may end it
    expect(s.stopsOnLastToken()).toBe(true);
    expect(s.planFields(1, true).logitBias).toEqual(new Map([[5, 2]]));
  });

  it('does not ban EOS under ignore_eos (it ends nothing), and asks no bias without min_tokens', () => {
    expect(make({}, { minTokens: 3, ignoreEos: true }).planFields(1, true).logitBias).toBeUndefined();
    expect(make({}, { minTokens: 3, ignoreEos: true, stopTokenIds: [4] }).planFields(1, true).logitBias).toEqual(new Map([[4, -Infinity]]));
    const s = make();
    s.appendOutput(99);
    expect(s.stopsOnLastToken()).toBe(true);
  });
});

describe('Sequence: log-probabilities', () => {
  it('asks for sampled-token rows only on a sampling step', () => {
    const s = make({ logprobs: 3 });
    expect(s.planFields(4, false).logprobs).toBeUndefined();
    expect(s.planFields(4, true).logprobs).toBe(3);
  });

  it('asks for prompt rows chunk by chunk, with the next prompt token on a non-final chunk, and keeps each row once', () => {
    const s = make({ promptLogprobs: 0 }, {}, [10, 11, 12, 13, 14]);
    expect(s.planFields(2, false)).toMatchObject({ promptLogprobs: 0, nextPromptTokenId: 12 });
    const row = (tokenId: number) => ({ tokenId, logprob: -1, rank: 1, top: [] });
    s.addPromptLogprobs([row(11), row(12)], 0);
    s.numComputedTokens = 2;
    const last = s.planFields(3, true);
    expect(last.promptLogprobs).toBe(0);
    expect(last.nextPromptTokenId).toBeUndefined();
    s.addPromptLogprobs([row(13), row(14)], 2);
    expect(s.promptLogprobs.map((r) => r.tokenId)).toEqual([11, 12, 13, 14]);
    // Recomputed after a preemption (prompt + 1 output token): nothing new to ask, nothing added twice.
    s.appendOutput(50);
    s.numComputedTokens = 0;
    expect(s.planFields(6, true).promptLogprobs).toBeUndefined();
    s.addPromptLogprobs([row(11), row(12), row(13), row(14), row(50)], 0);
    expect(s.promptLogprobs).toHaveLength(4);
  });
});

describe('Sequence: constrained by a grammar', () => {
  it('asks a mask row for its sampled token only, and EOS ends it even with ignore_eos', () => {
    const s = make({ constrained: true }, { ignoreEos: true, stopTokenIds: [42] });
    expect(s.planFields(1, true).constrained).toBe(true);
    expect(s.planFields(5, false).constrained).toBeUndefined();
    expect(s.stopTokenIds.sort()).toEqual([42, 99]);
    s.appendOutput(99);
    expect(s.stopsOnLastToken()).toBe(true);
  });

  it('leaves min_tokens to the mask: no -Infinity bias, and a stop id the grammar forced ends it', () => {
    const s = make({ constrained: true, logitBias: new Map([[5, 2]]) }, { minTokens: 3 });
    expect(s.planFields(1, true).logitBias).toEqual(new Map([[5, 2]]));
    expect(s.belowMinTokens).toBe(true);
    s.appendOutput(99);
    expect(s.stopsOnLastToken()).toBe(true);
  });
});
