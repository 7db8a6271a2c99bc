/**
 * Draws one frame of a live line chart on any 2D context (a worker's OffscreenCanvas or
 * the page's): dashed grid, y labels, time axis (seconds, or minutes past two of them),
 * one polyline per series with gaps at NaN and, for downsampled points, a faint band from
 * each bucket's min to its max (a spike stays visible when the mean hides it).
 * Pure function of the frame; no DOM.
 */
import { niceTicks, tickDecimals } from '../lib/niceTicks.js';

/** Everything needed to draw a chart; structured-cloneable (posted to the chart worker). */
export interface LineChartFrame {
  /** Size in CSS pixels and the device pixel ratio (the raster is width x dpr wide). */
  widthPx: number;
  heightPx: number;
  dpr: number;
  /** Point times, seconds relative to the newest point (<= 0), oldest first. */
  t: Float64Array;
  /** One column per series, same length as t; NaN = unknown. */
  columns: Float64Array[];
  /** Per column, the min and max of each downsampled point (a band under the line); absent at full resolution. */
  bands?: { lo: Float64Array; hi: Float64Array }[];
  /** Seconds the x axis spans back from the newest point (the range picked); default: the points' own span. */
  spanS?: number;
  /** Line color per column. */
  colors: string[];
  /** The values are counts: y ticks stay whole numbers. */
  integerAxis: boolean;
}

type Ctx2D = CanvasRenderingContext2D | OffscreenCanvasRenderingContext2D;

const AXIS = '#9aa3b2';
const GRID = '#2c323c';
const LEFT = 56;
const BOTTOM = 18;
const TOP = 6;
const RIGHT = 8;

/** Raster size of a frame, device pixels. */
export const rasterSize = (f: Pick<LineChartFrame, 'widthPx' | 'heightPx' | 'dpr'>): { width: number; height: number } => ({
  width: Math.max(1, Math.round(f.widthPx * f.dpr)),
  height: Math.max(1, Math.round(f.heightPx * f.dpr)),
});

export function drawLineChart(ctx: Ctx2D, f: LineChartFrame): void {
  const { widthPx, heightPx, dpr, t, columns } = f;
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  ctx.clearRect(0, 0, widthPx, heightPx);
  const n = t.length;
  let min = Infinity;
  let max = -Infinity;
  for (const col of [...columns, ...(f.bands ?? []).flatMap((b) => [b.lo, b.hi])]) {
    for (let i = 0; i < n; i++) {
      const v = col[i]!;
      if (v < min) min = v;
      if (v > max) max = v;
    }
  }
  const y = niceTicks(Math.min(0, min), Math.max(max, 0), 5, f.integerAxis ? 1 : 0);
  const yDecimals = tickDecimals((y.ticks[1] ?? y.hi) - (y.ticks[0] ?? y.lo));
  const tMin = Math.min(-1, f.spanS !== undefined ? -f.spanS : n > 0 ? t[0]! : -1);
  const plotW = Math.max(10, widthPx - LEFT - RIGHT);
  const plotH = Math.max(10, heightPx - TOP - BOTTOM);
  const xOf = (s: number): number => LEFT + ((s - tMin) / (0 - tMin)) * plotW;
  const yOf = (v: number): number => TOP + plotH - ((v - y.lo) / (y.hi - y.lo || 1)) * plotH;

  ctx.font = '11px system-ui, sans-serif';
  ctx.lineWidth = 1;
  ctx.strokeStyle = GRID;
  ctx.fillStyle = AXIS;
  ctx.textAlign = 'right';
  ctx.textBaseline = 'middle';
  ctx.setLineDash([3, 3]);
  for (const v of y.ticks) {
    const py = Math.round(yOf(v)) + 0.5;
    ctx.beginPath();
    ctx.moveTo(LEFT, py);
    ctx.lineTo(LEFT + plotW, py);
    ctx.stroke();
    ctx.fillText(v.toFixed(yDecimals), LEFT - 6, py);
  }
  // Past two minutes the time axis counts minutes.
  const minutes = tMin < -120;
  const unitS = minutes ? 60 : 1;
  const x = niceTicks(tMin / unitS, 0, 5);
  ctx.textAlign = 'center';
  ctx.textBaseline = 'top';
  for (const u of x.ticks) {
    const s = u * unitS;
    if (s < tMin || s > 0) continue;
    const px = Math.round(xOf(s)) + 0.5;
    ctx.beginPath();
    ctx.moveTo(px, TOP);
    ctx.lineTo(px, TOP + plotH);
    ctx.stroke();
    ctx.fillText(minutes ? `${Number(u.toFixed(1))}m` : `${Math.round(s)}s`, px, TOP + plotH + 4);
  }
  ctx.setLineDash([]);
  ctx.strokeStyle = AXIS;
  ctx.beginPath();
  ctx.moveTo(LEFT + 0.5, TOP);
  ctx.lineTo(LEFT + 0.5, TOP + plotH + 0.5);
  ctx.lineTo(LEFT + plotW, TOP + plotH + 0.5);
  ctx.stroke();

  f.bands?.forEach((b, c) => {
    ctx.fillStyle = f.colors[c] ?? AXIS;
    ctx.globalAlpha = 0.18;
    fillBand(ctx, t, b.lo, b.hi, xOf, yOf);
    ctx.globalAlpha = 1;
  });
  ctx.lineWidth = 1.5;
  ctx.lineJoin = 'round';
  columns.forEach((col, c) => {
    ctx.strokeStyle = f.colors[c] ?? AXIS;
    ctx.beginPath();
    let pen = false;
    for (let i = 0; i < n; i++) {
      const v = col[i]!;
      if (!Number.isFinite(v)) {
        pen = false;
        continue;
      }
      const px = xOf(t[i]!);
      const py = yOf(v);
      if (pen) ctx.lineTo(px, py);
      else ctx.moveTo(px, py);
      pen = true;
    }
    ctx.stroke();
  });
}

/** Fills lo..hi under each run of points where both are known. */
function fillBand(ctx: Ctx2D, t: Float64Array, lo: Float64Array, hi: Float64Array, xOf: (s: number) => number, yOf: (v: number) => number): void {
  const n = t.length;
  let i = 0;
  while (i < n) {
    while (i < n && !(Number.isFinite(lo[i]!) && Number.isFinite(hi[i]!))) i++;
    const start = i;
    while (i < n && Number.isFinite(lo[i]!) && Number.isFinite(hi[i]!)) i++;
    if (i - start < 2) continue;
    ctx.beginPath();
    ctx.moveTo(xOf(t[start]!), yOf(hi[start]!));
    for (let k = start + 1; k < i; k++) ctx.lineTo(xOf(t[k]!), yOf(hi[k]!));
    for (let k = i - 1; k >= start; k--) ctx.lineTo(xOf(t[k]!), yOf(lo[k]!));
    ctx.closePath();
    ctx.fill();
  }
}
