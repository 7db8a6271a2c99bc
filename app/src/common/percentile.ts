/**
 * Nearest-rank percentile of an ascending-sorted sample: the smallest value with at least
 * p% of the sample at or below it. Undefined for an empty sample.
 */
export function percentile(sorted: readonly number[], p: number): number | undefined {
  if (sorted.length === 0) return undefined;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
}
