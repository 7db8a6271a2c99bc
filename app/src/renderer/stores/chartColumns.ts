/**
 * The Dashboard's chart data as columns: one Float64Array per series over the model's
 * ring buffer of points (NaN where a value is unknown), built once per fold and shared by
 * every chart. No per-point objects, so a fold allocates a few arrays, not 600 records.
 */
import type { DashboardModel } from '../../common/dashboardModel.js';

/** Series as columns, oldest point first. */
export interface ChartColumns {
  /** Point times, seconds relative to the newest point (<= 0). */
  t: Float64Array;
  /** One column per series key, same length as t; NaN = unknown. */
  values: ReadonlyMap<string, Float64Array>;
}

/** Column key of a rank's step-time series. */
export const stepKey = (rankLabel: string): string => `step_${rankLabel}`;

/** Column key of a rank's windowed prefix-cache hit rate (%). */
export const prefixKey = (rankLabel: string): string => `prefix_${rankLabel}`;

/**
 * Columns keyed tokensPerSecond, running, waiting, kvUsage (%), kvCached (%), hits, misses,
 * captures (per s), hitRate (%), prefixHitRate (%), step_<rank>, prefix_<rank> (%);
 * stepLabels and prefixLabels name the ranks that have a step-time or hit-rate column.
 */
export function chartColumns(model: DashboardModel): { data: ChartColumns; stepLabels: string[]; prefixLabels: string[] } {
  const n = model.series.size;
  const t = new Float64Array(n);
  const col = (): Float64Array => new Float64Array(n);
  const cols = { tokensPerSecond: col(), running: col(), waiting: col(), kvUsage: col(), kvCached: col(), hits: col(), misses: col(), captures: col(), hitRate: col(), prefixHitRate: col() };
  const labels = model.rankLabels();
  const steps = labels.map(() => new Float64Array(n).fill(Number.NaN));
  // Hit-rate columns only for the ranks that hold a KV cache (not the FFN ranks).
  const kvLabels = labels.filter((l) => model.latest(l)?.stats.kv);
  const prefix = kvLabels.map(() => new Float64Array(n).fill(Number.NaN));
  const t0 = model.series.last()?.tMs ?? 0;
  for (let i = 0; i < n; i++) {
    const p = model.series.at(i)!;
    t[i] = (p.tMs - t0) / 1000;
    cols.tokensPerSecond[i] = p.tokensPerSecond;
    cols.running[i] = p.running;
    cols.waiting[i] = p.waiting;
    cols.kvUsage[i] = p.kvUsage * 100;
    cols.kvCached[i] = p.kvCached * 100;
    cols.hits[i] = p.graphHitsPerSecond;
    cols.misses[i] = p.graphMissesPerSecond;
    cols.captures[i] = p.graphCapturesPerSecond;
    cols.hitRate[i] = p.graphHitRate * 100;
    cols.prefixHitRate[i] = p.prefixHitRate * 100;
    for (let r = 0; r < labels.length; r++) steps[r]![i] = p.stepMs[labels[r]!] ?? Number.NaN;
    for (let r = 0; r < kvLabels.length; r++) prefix[r]![i] = (p.prefixHitRateByRank[kvLabels[r]!] ?? Number.NaN) * 100;
  }
  const values = new Map<string, Float64Array>(Object.entries(cols));
  // Ranks without a value (no step time; no lookups yet, for the hit rate) get no line.
  const withValues = (ranks: string[], perRank: Float64Array[], key: (label: string) => string): string[] =>
    ranks.filter((l, r) => {
      if (!perRank[r]!.some(Number.isFinite)) return false;
      values.set(key(l), perRank[r]!);
      return true;
    });
  return { data: { t, values }, stepLabels: withValues(labels, steps, stepKey), prefixLabels: withValues(kvLabels, prefix, prefixKey) };
}
