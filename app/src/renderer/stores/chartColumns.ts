/**
 * The Dashboard's chart data as columns over a window of the chart history (one
 * Float64Array per series, NaN where a value is unknown), built once per fold and shared
 * by every chart. No per-point objects; at most one tier's buckets (<= 600) per column.
 */
import type { ChartWindow } from '../../common/ChartHistory.js';
import { rankOfKey } from '../../common/chartRow.js';
import { compareLabels } from '../../common/dashboardModel.js';

/** Series as columns, oldest point first. */
export interface ChartColumns {
  /** Point times, seconds relative to the newest point (<= 0). */
  t: Float64Array;
  /** Point times, epoch ms (exports). */
  tMs: Float64Array;
  /** One column per series key, same length as t: the bucket means; NaN = unknown. */
  values: ReadonlyMap<string, Float64Array>;
  /** The buckets' smallest and largest values (equal to values at full resolution). */
  min: ReadonlyMap<string, Float64Array>;
  max: ReadonlyMap<string, Float64Array>;
  /** The window shown, ms (the x axis spans it even while the history is shorter). */
  rangeMs: number;
  /** Bucket length of the points, ms. */
  bucketMs: number;
}

/**
 * The window's columns (keys as in common/chartRow), times made relative to the newest
 * point; stepLabels and prefixLabels name the ranks with a step-time or hit-rate column
 * in the window, in rank order.
 */
export function chartColumns(w: ChartWindow): { data: ChartColumns; stepLabels: string[]; prefixLabels: string[] } {
  const n = w.tMs.length;
  const t = new Float64Array(n);
  const t0 = n > 0 ? w.tMs[n - 1]! : 0;
  for (let i = 0; i < n; i++) t[i] = (w.tMs[i]! - t0) / 1000;
  const labels = (prefix: 'step_' | 'prefix_'): string[] =>
    [...w.mean.keys()]
      .map((k) => rankOfKey(k, prefix))
      .filter((l): l is string => l !== null)
      .sort(compareLabels);
  return {
    data: { t, tMs: w.tMs, values: w.mean, min: w.min, max: w.max, rangeMs: w.rangeMs, bucketMs: w.bucketMs },
    stepLabels: labels('step_'),
    prefixLabels: labels('prefix_'),
  };
}
