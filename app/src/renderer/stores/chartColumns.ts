/**
 * The Dashboard's chart data as columns: one Float64Array per series over the model's
 * ring buffer of points (NaN where a value is unknown), built once per fold and shared by
 * every chart. No per-point objects, so a fold allocates a few arrays, not 600 records.
 */
import type { DashboardModel } from './dashboardModel.js';

/** Series as columns, oldest point first. */
export interface ChartColumns {
  /** Point times, seconds relative to the newest point (<= 0). */
  t: Float64Array;
  /** One column per series key, same length as t; NaN = unknown. */
  values: ReadonlyMap<string, Float64Array>;
}

/** Column key of a rank's step-time series. */
export const stepKey = (rankLabel: string): string => `step_${rankLabel}`;

/** Columns keyed tokensPerSecond, running, waiting, kvUsage (%), hits, misses, captures (per s), hitRate (%), step_<rank>. */
export function chartColumns(model: DashboardModel): { data: ChartColumns; stepLabels: string[] } {
  const n = model.series.size;
  const t = new Float64Array(n);
  const col = (): Float64Array => new Float64Array(n);
  const cols = { tokensPerSecond: col(), running: col(), waiting: col(), kvUsage: col(), hits: col(), misses: col(), captures: col(), hitRate: col() };
  const labels = model.rankLabels();
  const steps = labels.map(() => new Float64Array(n).fill(Number.NaN));
  const t0 = model.series.last()?.tMs ?? 0;
  for (let i = 0; i < n; i++) {
    const p = model.series.at(i)!;
    t[i] = (p.tMs - t0) / 1000;
    cols.tokensPerSecond[i] = p.tokensPerSecond;
    cols.running[i] = p.running;
    cols.waiting[i] = p.waiting;
    cols.kvUsage[i] = p.kvUsage * 100;
    cols.hits[i] = p.graphHitsPerSecond;
    cols.misses[i] = p.graphMissesPerSecond;
    cols.captures[i] = p.graphCapturesPerSecond;
    cols.hitRate[i] = p.graphHitRate * 100;
    for (let r = 0; r < labels.length; r++) steps[r]![i] = p.stepMs[labels[r]!] ?? Number.NaN;
  }
  const values = new Map<string, Float64Array>(Object.entries(cols));
  // Ranks that never reported a step time get no line.
  const stepLabels = labels.filter((l, r) => {
    if (!steps[r]!.some(Number.isFinite)) return false;
    values.set(stepKey(l), steps[r]!);
    return true;
  });
  return { data: { t, values }, stepLabels };
}
