/**
 * A sequence's log-probability rows out of a step's TokenLogprobs (the engine's flat CSR
 * layout, shared/src/engine/step.ts) as plain objects the serving layer hands on.
 */
import type { TokenLogprobs } from '@afd/shared';

/** One token and its log-probability. */
export interface LogprobEntry {
  tokenId: number;
  logprob: number;
}

/** The log-probability of one chosen token (sampled, or the next prompt token), its rank and the row's top k. */
export interface TokenLogprob extends LogprobEntry {
  /** 1-based rank of the token in its row (1 = most likely). */
  rank: number;
  /** The row's k most likely tokens, most likely first. */
  top: LogprobEntry[];
}

/** Rows the step returned for sequence `seq` (its place in the plan). */
export function numRowsOf(t: TokenLogprobs | undefined, seq: number): number {
  if (!t) return 0;
  return (t.rowOffsets[seq + 1] ?? 0) - (t.rowOffsets[seq] ?? 0);
}

/** Sequence `seq`'s rows, each with its top `k` (the padding of a wider step dropped). */
export function logprobRowsOf(t: TokenLogprobs, seq: number, k: number): TokenLogprob[] {
  const rows: TokenLogprob[] = [];
  for (let r = t.rowOffsets[seq]!; r < t.rowOffsets[seq + 1]!; r++) {
    const at = r * t.width;
    const top: LogprobEntry[] = [];
    for (let j = 1; j <= Math.min(k, t.width - 1); j++) {
      const tokenId = t.tokenIds[at + j]!;
      if (tokenId >= 0) top.push({ tokenId, logprob: t.logprobs[at + j]! });
    }
    rows.push({ tokenId: t.tokenIds[at]!, logprob: t.logprobs[at]!, rank: t.ranks[r]!, top });
  }
  return rows;
}
