/** Summary statistics of latency samples (milliseconds). */

export interface Summary {
  mean: number;
  median: number;
  std: number;
  /** Requested percentiles, e.g. { p99: 12.3 }. */
  percentiles: Record<string, number>;
}

/** Linear-interpolated percentile (numpy's default), q in [0, 100]. */
export function percentile(sorted: readonly number[], q: number): number {
  if (sorted.length === 0) return 0;
  const pos = ((sorted.length - 1) * q) / 100;
  const lo = Math.floor(pos);
  const hi = Math.ceil(pos);
  return sorted[lo]! + (sorted[hi]! - sorted[lo]!) * (pos - lo);
}

/** The median of a non-empty list. */
export function median(values: readonly number[]): number {
  if (values.length === 0) throw new Error('median of no values');
  return percentile([...values].sort((x, y) => x - y), 50);
}

export function summarize(samples: readonly number[], percentiles: readonly number[]): Summary {
  const sorted = [...samples].sort((a, b) => a - b);
  const n = sorted.length;
  const mean = n ? sorted.reduce((a, b) => a + b, 0) / n : 0;
  const std = n ? Math.sqrt(sorted.reduce((a, b) => a + (b - mean) ** 2, 0) / n) : 0;
  const out: Record<string, number> = {};
  for (const q of percentiles) out[`p${q}`] = percentile(sorted, q);
  return { mean, median: percentile(sorted, 50), std, percentiles: out };
}
