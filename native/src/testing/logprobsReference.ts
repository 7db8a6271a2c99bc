/**
 * A float64 reference of the engine's logit pipeline (core/logit-ops.h), for tests: the
 * allowed-token mask, logit bias and vLLM's penalties on a raw logit row (what the engine
 * returns with returnLogits on a plan without extras), the log-softmax of the row /
 * temperature (0 counts as 1), and one log-probability row (the chosen token, its rank,
 * the top k).
 */
import { maskWordsPerRow, type PlanPenalties, type TokenLogprobs } from '@afd/shared';

/** One allowed-token mask row (xgrammar's layout: bit t % 32 of word t / 32) allowing `allowed`. */
export function maskRowOf(allowed: Iterable<number>, vocabSize: number): Int32Array {
  const row = new Int32Array(maskWordsPerRow(vocabSize));
  for (const t of allowed) row[t >> 5] = row[t >> 5]! | (1 << (t & 31));
  return row;
}

/** Token t is allowed by a mask row. */
export const maskAllows = (row: Int32Array, t: number): boolean => ((row[t >> 5]! >>> (t & 31)) & 1) === 1;

/** The mask (tokens it bans become -Infinity, entries skip them), then bias, then repetition, frequency and presence penalties on a copy of `raw`. */
export function processLogits(
  raw: ArrayLike<number>,
  opts: { bias?: ReadonlyMap<number, number>; penalties?: PlanPenalties; mask?: Int32Array },
): Float64Array {
  const l = Float64Array.from(raw as ArrayLike<number>);
  const allowed = (t: number): boolean => opts.mask === undefined || maskAllows(opts.mask, t);
  for (let t = 0; t < l.length; t++) if (!allowed(t)) l[t] = -Infinity;
  for (const [id, value] of opts.bias ?? []) if (allowed(id)) l[id] = l[id]! + value;
  const p = opts.penalties;
  for (const [id, count] of p?.seen ?? []) {
    if (!allowed(id)) continue;
    const x = l[id]!;
    let y = x > 0 ? x / p!.repetition : x * p!.repetition;
    y -= p!.frequency * count;
    if (count > 0) y -= p!.presence;
    l[id] = y;
  }
  return l;
}

/** log-softmax(row / temperature) in float64; temperature 0 counts as 1. */
export function logSoftmax(row: ArrayLike<number>, temperature = 1): Float64Array {
  const t = temperature > 0 ? temperature : 1;
  let max = -Infinity;
  for (let i = 0; i < row.length; i++) max = Math.max(max, row[i]!);
  let sum = 0;
  for (let i = 0; i < row.length; i++) sum += Math.exp((row[i]! - max) / t);
  const logSum = Math.log(sum);
  return Float64Array.from(row as ArrayLike<number>, (x) => (x - max) / t - logSum);
}

/** One row as the engine reports it: the chosen token, then the top k (value descending, lower id first). */
export interface ReferenceRow {
  ids: number[];
  values: number[];
  rank: number;
}

export function referenceRow(logprobs: Float64Array, chosen: number, k: number): ReferenceRow {
  const order = Array.from(logprobs.keys()).sort((a, b) => logprobs[b]! - logprobs[a]! || a - b);
  const top = order.slice(0, k);
  let above = 0;
  for (const v of logprobs) above += v > logprobs[chosen]! ? 1 : 0;
  return { ids: [chosen, ...top], values: [logprobs[chosen]!, ...top.map((i) => logprobs[i]!)], rank: 1 + above };
}

/** Row r of a TokenLogprobs, without its padding (entries whose id is -1). */
export function rowOf(l: TokenLogprobs, r: number): ReferenceRow {
  const ids = Array.from(l.tokenIds.subarray(r * l.width, (r + 1) * l.width));
  const values = Array.from(l.logprobs.subarray(r * l.width, (r + 1) * l.width));
  const n = ids.indexOf(-1, 1) < 0 ? ids.length : ids.indexOf(-1, 1);
  return { ids: ids.slice(0, n), values: values.slice(0, n), rank: l.ranks[r]! };
}

/** The largest |actual - expected| over the values of two rows with equal ids (Infinity when the ids differ). */
export function rowError(actual: ReferenceRow, expected: ReferenceRow): number {
  if (actual.ids.join(',') !== expected.ids.join(',') || actual.rank !== expected.rank) return Infinity;
  return Math.max(...actual.values.map((v, i) => Math.abs(v - expected.values[i]!)));
}
