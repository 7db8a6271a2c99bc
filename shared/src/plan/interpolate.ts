/**
 * Piecewise-linear interpolation of measured curves. Between points: the straight line;
 * beyond the ends: the end segment extended (a cost curve grows past its last point rather
 * than flattening), never below zero. One point: that value everywhere.
 */

export interface XY {
  x: number;
  y: number;
}

/** y at x on the polyline through `points` (any order; equal x values are averaged). */
export function interpolate(points: readonly XY[], x: number): number {
  if (points.length === 0) throw new Error('interpolate: no points');
  const byX = new Map<number, number[]>();
  for (const p of points) byX.set(p.x, [...(byX.get(p.x) ?? []), p.y]);
  const pts = [...byX].map(([px, ys]) => ({ x: px, y: ys.reduce((a, b) => a + b, 0) / ys.length })).sort((a, b) => a.x - b.x);
  if (pts.length === 1) return pts[0]!.y;
  let i = pts.findIndex((p) => p.x >= x);
  if (i <= 0) i = i === 0 ? 1 : pts.length - 1; // before the first point: first segment; past the last: last segment
  const a = pts[i - 1]!;
  const b = pts[i]!;
  return Math.max(0, a.y + ((b.y - a.y) * (x - a.x)) / (b.x - a.x));
}

/**
 * z at (x, y) on a grid of measurements that may be ragged: along x within each measured
 * y, then along y between those.
 */
export function interpolate2d(points: readonly { x: number; y: number; z: number }[], x: number, y: number): number {
  if (points.length === 0) throw new Error('interpolate2d: no points');
  const rows = new Map<number, XY[]>();
  for (const p of points) rows.set(p.y, [...(rows.get(p.y) ?? []), { x: p.x, y: p.z }]);
  return interpolate([...rows].map(([ry, row]) => ({ x: ry, y: interpolate(row, x) })), y);
}
