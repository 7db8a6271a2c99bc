/**
 * What `afd-bench decode --top-logprobs <k>`, `--penalties` and `--token-mask` add to every
 * sequence of a decode step, so the cost of the engine's logit pipeline (mask, bias and
 * penalties on the device, top-k log-probabilities read back with the tokens) is measured
 * against the plain step in the same run: k top log-probabilities; presence 0.5,
 * frequency 0.5, repetition 1.1 over 256 distinct seen tokens (a quarter of them
 * prompt-only) and a 16-entry logit bias; an allowed-token mask row allowing half the
 * vocabulary (every other 32-token block), given deferred by provideTokenMask each step.
 */
import { maskWordsPerRow, type PlanSeq } from '@afd/shared';

export interface DecodeExtras {
  /** Top log-probabilities per sequence (0..20); null = none. */
  topLogprobs: number | null;
  penalties: boolean;
  /** Every sequence samples under a mask row, deferred (provideTokenMask after step). */
  tokenMask: boolean;
}

export const SEEN_TOKENS = 256;
export const BIAS_ENTRIES = 16;

/** A short label ("top-logprobs 5 + penalties"), or null when the run adds nothing. */
export function describeExtras(x: DecodeExtras): string | null {
  const parts = [x.topLogprobs !== null ? `top-logprobs ${x.topLogprobs}` : null, x.penalties ? 'penalties' : null, x.tokenMask ? 'token-mask' : null].filter(
    (p): p is string => p !== null,
  );
  return parts.length > 0 ? parts.join(' + ') : null;
}

/** `count` distinct token ids of sequence `seq` (a small LCG over the vocabulary). */
export function distinctTokens(seq: number, count: number, vocab: number): number[] {
  const out = new Set<number>();
  let x = (seq * 2246822519 + 374761393) >>> 0;
  while (out.size < Math.min(count, vocab)) {
    x = (Math.imul(x, 1664525) + 1013904223) >>> 0;
    out.add(x % vocab);
  }
  return [...out];
}

/** The PlanSeq fields of sequence `seq` (built once per sequence; the timed loop reuses them). */
export function extrasOf(x: DecodeExtras, seq: number, vocab: number): Partial<PlanSeq> {
  const extra: Partial<PlanSeq> = {};
  if (x.topLogprobs !== null) extra.logprobs = x.topLogprobs;
  if (x.penalties) {
    const tokens = distinctTokens(seq, SEEN_TOKENS + BIAS_ENTRIES, vocab);
    const seen = new Map(tokens.slice(0, SEEN_TOKENS).map((t, i) => [t, i % 4 === 0 ? 0 : 1 + (i % 3)]));
    extra.penalties = { presence: 0.5, frequency: 0.5, repetition: 1.1, seen };
    extra.logitBias = new Map(tokens.slice(SEEN_TOKENS).map((t, i) => [t, i % 2 === 0 ? 2 : -2]));
  }
  if (x.tokenMask) extra.constrained = true;
  return extra;
}

/**
 * Sequence `slot`'s extras as the scheduler sends them: its penalties in engine penalty slot
 * `slot`, seeded with the seen list on the first step of a run, then read from the device
 * (no list) while the sampler counts the drawn tokens into it.
 */
export function withPenaltySlot(extra: Partial<PlanSeq>, slot: number, seed: boolean): Partial<PlanSeq> {
  if (!extra.penalties) return extra;
  return { ...extra, penalties: { ...extra.penalties, seen: seed ? extra.penalties.seen : NO_SEEN, slot: { id: slot, seed } } };
}
const NO_SEEN: ReadonlyMap<number, number> = new Map();

/**
 * The deferred token mask of a step of `batch` sequences: one row per sequence, each
 * allowing every other 32-token block of the vocabulary (words -1, 0, -1, ...), so half
 * the vocabulary is banned and the device pass writes half of every row.
 */
export function halfVocabMask(batch: number, vocab: number): Int32Array {
  const words = maskWordsPerRow(vocab);
  const mask = new Int32Array(batch * words);
  for (let i = 0; i < mask.length; i++) mask[i] = (i % words) % 2 === 0 ? -1 : 0;
  return mask;
}
