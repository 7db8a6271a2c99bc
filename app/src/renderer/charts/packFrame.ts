/**
 * A LineChartFrame for the trip to the chart worker: every array (times, columns, bands)
 * packed into one Float64Array that is transferred, not cloned. Cloning costs a new
 * backing store per typed array (a frame had up to 25), and a column that is a view of a
 * larger buffer (a chart-history window) would clone that whole buffer.
 */
import type { LineChartFrame } from './drawLineChart.js';

/** A frame with its arrays in `data`: t, then each column, then each band's lo and hi (n values each). */
export type PackedFrame = Omit<LineChartFrame, 't' | 'columns' | 'bands'> & {
  data: Float64Array;
  /** Points per array. */
  n: number;
  columnCount: number;
  hasBands: boolean;
};

export function packFrame(f: LineChartFrame): PackedFrame {
  const { t, columns, bands, ...rest } = f;
  const n = t.length;
  const arrays = [t, ...columns, ...(bands ?? []).flatMap((b) => [b.lo, b.hi])];
  const data = new Float64Array(arrays.length * n);
  arrays.forEach((a, i) => {
    const part = data.subarray(i * n, (i + 1) * n);
    // A column shorter than t (a series with no values) is unknown throughout.
    if (a.length >= n) part.set(a.length === n ? a : a.subarray(0, n));
    else part.fill(Number.NaN);
  });
  return { ...rest, data, n, columnCount: columns.length, hasBands: bands !== undefined };
}

export function unpackFrame(p: PackedFrame): LineChartFrame {
  const { data, n, columnCount, hasBands, ...rest } = p;
  const at = (i: number): Float64Array => data.subarray(i * n, (i + 1) * n);
  const columns = Array.from({ length: columnCount }, (_, c) => at(1 + c));
  const bands = hasBands ? Array.from({ length: columnCount }, (_, c) => ({ lo: at(1 + columnCount + 2 * c), hi: at(2 + columnCount + 2 * c) })) : undefined;
  return { ...rest, t: at(0), columns, ...(bands ? { bands } : {}) };
}
