/**
 * The FakeEngine's model and sampler, and the TypeScript reference of the StepExtras rules
 * (shared/src/engine/step.ts) that the native engine implements on the device:
 *
 *   logits(row)                       fake, deterministic (see fakeModelLogits)
 *   + logit bias                      additive; -Infinity bans a token
 *   repetition penalty                tokens seen in prompt or output: l > 0 ? l / r : l * r
 *   - frequency * count - presence    tokens seen in the output (count > 0)
 *   / temperature                     0 counts as 1
 *   = processed row                   what is sampled from (top-k, top-p, min-p on top) and
 *                                     what the logprobs row reports (log-softmax)
 *
 * Prompt rows report the model's raw log-softmax (no bias, penalties or temperature), as
 * vLLM does. A row's entry 0 is the chosen token; entries 1..k the k most likely tokens,
 * most likely first, ties to the lower id; rank is 1-based.
 *
 * Logits are sparse: every token has `base` except the `explicit` ones, so a row costs
 * O(explicit tokens) whatever the vocabulary size, and its log-softmax is exact.
 */
import type { TokenLogprobs } from '@afd/shared';

/** A row's logits: `base` for every token of [0, vocabSize) not in `explicit`. */
export interface SparseLogits {
  vocabSize: number;
  base: number;
  explicit: Map<number, number>;
}

/** One (token, log-probability) pair. */
export interface TokenLp {
  tokenId: number;
  logprob: number;
}

/** Logit of the token the fake model prefers after (lastTokenId, position, seed). */
export const PREFERRED_LOGIT = 30;
/** Logit of the first other candidate token; the next ones get 1 less each. */
export const CANDIDATE_LOGIT = 10;

/**
 * The fake model: the preferred token gets PREFERRED_LOGIT, the other candidate tokens
 * CANDIDATE_LOGIT, CANDIDATE_LOGIT - 1, ... in list order, every other token 0. With no
 * bias or penalty the preferred token wins by 20 nats, so temperature-1 sampling picks it
 * (all but ~1e-8 of the time).
 */
export function fakeModelLogits(vocabSize: number, preferred: number, candidates: readonly number[]): SparseLogits {
  const explicit = new Map<number, number>();
  let next = CANDIDATE_LOGIT;
  for (const t of candidates) {
    if (t === preferred || explicit.has(t) || t < 0 || t >= vocabSize) continue;
    explicit.set(t, next--);
  }
  if (preferred >= 0 && preferred < vocabSize) explicit.set(preferred, PREFERRED_LOGIT);
  return { vocabSize, base: 0, explicit };
}

/** Penalties and biases of one sampled row, as one sequence's slice of StepExtras. */
export interface RowProcessing {
  /** Additive biases by token id. */
  bias: ReadonlyMap<number, number>;
  presence: number;
  frequency: number;
  repetition: number;
  /** Tokens seen in prompt or output, with their output counts (0 = prompt only). */
  seen: ReadonlyMap<number, number>;
  /** Sampling temperature (0 = greedy, reported as 1). */
  temperature: number;
}

/** Applies bias, penalties and temperature to a row (a new SparseLogits). */
export function processLogits(row: SparseLogits, p: RowProcessing): SparseLogits {
  const explicit = new Map(row.explicit);
  const at = (t: number): number => explicit.get(t) ?? row.base;
  for (const [t, b] of p.bias) explicit.set(t, at(t) + b);
  for (const [t, count] of p.seen) {
    let l = at(t);
    if (p.repetition !== 1) l = l > 0 ? l / p.repetition : l * p.repetition;
    if (count > 0) l -= p.frequency * count + p.presence;
    explicit.set(t, l);
  }
  const scale = p.temperature > 0 ? 1 / p.temperature : 1;
  if (scale !== 1) for (const [t, l] of explicit) explicit.set(t, l * scale);
  return { vocabSize: row.vocabSize, base: row.base * scale, explicit };
}

/** log(sum over the vocabulary of exp(logit)), computed stably. */
export function logSumExp(row: SparseLogits): number {
  const numBase = row.vocabSize - row.explicit.size;
  let m = numBase > 0 ? row.base : -Infinity;
  for (const l of row.explicit.values()) m = Math.max(m, l);
  if (m === -Infinity) return -Infinity;
  let sum = numBase > 0 ? numBase * Math.exp(row.base - m) : 0;
  for (const l of row.explicit.values()) sum += Math.exp(l - m);
  return m + Math.log(sum);
}

/** True when token a comes before token b in "most likely first, ties to the lower id" order. */
const before = (la: number, a: number, lb: number, b: number): boolean => la > lb || (la === lb && a < b);

/** The k most likely tokens of a row with their logits, most likely first (ties: lower id). */
export function topTokens(row: SparseLogits, k: number): { tokenId: number; logit: number }[] {
  const sorted = [...row.explicit].map(([tokenId, logit]) => ({ tokenId, logit })).sort((x, y) => (before(x.logit, x.tokenId, y.logit, y.tokenId) ? -1 : 1));
  const out: { tokenId: number; logit: number }[] = [];
  let e = 0;
  let rest = 0; // next candidate id of the base tier (ids not in explicit, ascending)
  const nextRest = (): number => {
    while (rest < row.vocabSize && row.explicit.has(rest)) rest++;
    return rest;
  };
  while (out.length < k) {
    const r = nextRest();
    const x = sorted[e];
    const restOk = r < row.vocabSize;
    if (!x && !restOk) break;
    if (x && (!restOk || before(x.logit, x.tokenId, row.base, r))) {
      out.push(x);
      e++;
    } else {
      out.push({ tokenId: r, logit: row.base });
      rest++;
    }
  }
  return out;
}

/** 1-based rank of a token in its row (1 = most likely; ties to the lower id). */
export function rankOf(row: SparseLogits, tokenId: number): number {
  const l = row.explicit.get(tokenId) ?? row.base;
  let rank = 1;
  let explicitBelowId = 0;
  for (const [t, lt] of row.explicit) {
    if (t !== tokenId && before(lt, t, l, tokenId)) rank++;
    if (t < tokenId) explicitBelowId++;
  }
  const numBase = row.vocabSize - row.explicit.size - (row.explicit.has(tokenId) ? 0 : 1);
  if (row.base > l) rank += numBase;
  else if (row.base === l) rank += tokenId - explicitBelowId; // base-tier ids below tokenId
  return rank;
}

/** A logprobs row: the chosen token's log-probability and rank, and the row's top k. */
export interface LogprobRow {
  chosen: TokenLp;
  rank: number;
  top: TokenLp[];
}

/** The logprobs row of `chosen` in a (processed or raw) row, with its top k. */
export function logprobRow(row: SparseLogits, chosen: number, k: number): LogprobRow {
  const lse = logSumExp(row);
  const lp = (l: number): number => l - lse;
  return {
    chosen: { tokenId: chosen, logprob: lp(row.explicit.get(chosen) ?? row.base) },
    rank: rankOf(row, chosen),
    top: topTokens(row, k).map((t) => ({ tokenId: t.tokenId, logprob: lp(t.logit) })),
  };
}

/** Sampler settings of a row. */
export interface RowSampling {
  temperature: number;
  topK: number;
  topP: number;
  minP: number;
  seed: number;
  /** The position the token is sampled for (the uniform's second key). */
  position: number;
}

/** A uniform in [0, 1) from (seed, position): the fake's own hash, not the engine's. */
export function uniformOf(seed: number, position: number): number {
  let h = (seed ^ Math.imul(position + 1, 0x9e3779b1)) >>> 0;
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b) >>> 0;
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35) >>> 0;
  return ((h ^ (h >>> 16)) >>> 0) / 2 ** 32;
}

/** The id of the j-th (0-based) token of the base tier (ids not in explicit, ascending). */
function nthBaseId(row: SparseLogits, j: number): number {
  let id = j;
  for (const e of [...row.explicit.keys()].sort((a, b) => a - b)) {
    if (e <= id) id++;
    else break;
  }
  return id;
}

/**
 * Samples a processed row: greedy (the most likely token) at temperature 0, else min-p,
 * top-k and top-p keep a prefix of the tokens in likelihood order and a draw by
 * uniformOf(seed, position) picks from it. Within the base tier, explicit tokens that
 * tie with the base come first (the order of equal tokens is the fake's own).
 */
export function sampleRow(row: SparseLogits, s: RowSampling): number {
  const first = topTokens(row, 1)[0];
  if (!first) throw new Error('fake sampler: the row has no tokens');
  if (s.temperature === 0) return first.tokenId;
  const lse = logSumExp(row);
  const pMax = Math.exp(first.logit - lse);
  // Groups in likelihood order: explicit tokens one by one, the base tier as one group.
  const explicitSorted = [...row.explicit].sort((x, y) => (before(x[1], x[0], y[1], y[0]) ? -1 : 1));
  const numBase = row.vocabSize - row.explicit.size;
  const groups: { tokenId: number | null; count: number; p: number }[] = [];
  let baseAdded = numBase === 0;
  for (const [t, l] of explicitSorted) {
    if (!baseAdded && row.base > l) {
      groups.push({ tokenId: null, count: numBase, p: Math.exp(row.base - lse) });
      baseAdded = true;
    }
    groups.push({ tokenId: t, count: 1, p: Math.exp(l - lse) });
  }
  if (!baseAdded) groups.push({ tokenId: null, count: numBase, p: Math.exp(row.base - lse) });
  // Keep a prefix: min-p, then top-k, then top-p over what is left (renormalised).
  const kept: typeof groups = [];
  let left = s.topK > 0 ? s.topK : Infinity;
  for (const g of groups) {
    if (left <= 0 || g.p === 0 || g.p < s.minP * pMax) break;
    const count = Math.min(g.count, left);
    kept.push({ ...g, count });
    left -= count;
  }
  const total = kept.reduce((sum, g) => sum + g.count * g.p, 0);
  let mass = 0;
  const cut: typeof groups = [];
  for (const g of kept) {
    if (mass >= s.topP * total) break;
    const need = Math.ceil((s.topP * total - mass) / g.p - 1e-12);
    const count = Math.max(1, Math.min(g.count, need));
    cut.push({ ...g, count });
    mass += count * g.p;
  }
  let u = uniformOf(s.seed, s.position) * mass;
  for (const g of cut) {
    if (u < g.count * g.p) return g.tokenId ?? nthBaseId(row, Math.min(g.count - 1, Math.floor(u / g.p)));
    u -= g.count * g.p;
  }
  const last = cut[cut.length - 1]!;
  return last.tokenId ?? nthBaseId(row, last.count - 1);
}

/**
 * Packs rows into the contract's TokenLogprobs layout: rowsPerSeq[s] are sequence s's
 * rows in order, ks[s] its k (-1 = none); width = 1 + the largest k, -1 / NaN pad.
 */
export function packLogprobRows(rowsPerSeq: readonly LogprobRow[][], ks: readonly number[]): TokenLogprobs {
  const width = 1 + Math.max(0, ...ks);
  const numRows = rowsPerSeq.reduce((n, r) => n + r.length, 0);
  const out: TokenLogprobs = {
    rowOffsets: new Int32Array(rowsPerSeq.length + 1),
    width,
    tokenIds: new Int32Array(numRows * width).fill(-1),
    logprobs: new Float32Array(numRows * width).fill(NaN),
    ranks: new Int32Array(numRows),
  };
  let r = 0;
  rowsPerSeq.forEach((rows, s) => {
    for (const row of rows) {
      const entries = [row.chosen, ...row.top];
      entries.forEach((e, j) => {
        out.tokenIds[r * width + j] = e.tokenId;
        out.logprobs[r * width + j] = e.logprob;
      });
      out.ranks[r++] = row.rank;
    }
    out.rowOffsets[s + 1] = r;
  });
  return out;
}

/**
 * A row under an allowed-token mask (xgrammar layout, the row's words from `offset`): every
 * token it does not allow gets -Infinity. Kept sparse: when few tokens are allowed the row
 * lists them (base -Infinity), otherwise it lists the banned ones.
 */
export function maskLogits(row: SparseLogits, mask: Int32Array, offset: number): SparseLogits {
  const allowed = (t: number): boolean => ((mask[offset + (t >>> 5)]! >>> (t & 31)) & 1) === 1;
  let count = 0;
  for (let t = 0; t < row.vocabSize; t++) if (allowed(t)) count++;
  if (count === 0) throw new Error('fake engine: a token mask row allows no token');
  const explicit = new Map<number, number>();
  if (count <= row.vocabSize / 2) {
    for (let t = 0; t < row.vocabSize; t++) if (allowed(t)) explicit.set(t, row.explicit.get(t) ?? row.base);
    return { vocabSize: row.vocabSize, base: -Infinity, explicit };
  }
  for (const [t, l] of row.explicit) explicit.set(t, l);
  for (let t = 0; t < row.vocabSize; t++) if (!allowed(t)) explicit.set(t, -Infinity);
  return { vocabSize: row.vocabSize, base: row.base, explicit };
}
