/**
 * Dual-batch overlap (DBO): when a step is big enough, the batch is cut into two stages so
 * stage 1's attention overlaps stage 0's FFN round trip. Decode-only batches split from
 * `decodeTokenThreshold` tokens, batches with prefill tokens from `prefillTokenThreshold`
 * (the same two knobs as vLLM's dbo_decode_token_threshold / dbo_prefill_token_threshold).
 */

export interface DboConfig {
  /** Split batches into two stages at all. */
  enabled: boolean;
  /** Decode-only batches with at least this many tokens are split. */
  decodeTokenThreshold: number;
  /** Batches containing prefill with at least this many tokens are split. */
  prefillTokenThreshold: number;
}

/**
 * Returns stageSplit for StepPlan: the index of the first sequence of stage 1, or
 * `tokensPerSeq.length` for one stage. The cut is at the sequence boundary that balances
 * tokens best; both stages are non-empty.
 */
export function chooseStageSplit(tokensPerSeq: readonly number[], hasPrefill: boolean, dbo: DboConfig): number {
  const numSeqs = tokensPerSeq.length;
  if (!dbo.enabled || numSeqs < 2) return numSeqs;
  const total = tokensPerSeq.reduce((a, b) => a + b, 0);
  const threshold = hasPrefill ? dbo.prefillTokenThreshold : dbo.decodeTokenThreshold;
  if (total < threshold) return numSeqs;
  let best = 1;
  let bestImbalance = Infinity;
  let prefix = 0;
  for (let cut = 1; cut < numSeqs; cut++) {
    prefix += tokensPerSeq[cut - 1] ?? 0;
    const imbalance = Math.abs(total - 2 * prefix);
    if (imbalance < bestImbalance) {
      bestImbalance = imbalance;
      best = cut;
    }
  }
  return best;
}
