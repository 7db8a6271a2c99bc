/**
 * Draws one frame of a live line chart on any 2D context (a worker's OffscreenCanvas or
 * the page's): dashed grid, y labels, time axis, one polyline per series with gaps at NaN.
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
  for (const col of columns) {
    for (let i = 0; i < n; i++) {
      const v = col[i]!;
      if (v < min) min = v;
      if (v > max) max = v;
    }
  }
  const y = niceTicks(Math.min(0, min), Math.max(max, 0), 5, f.integerAxis ? 1 : 0);
  const yDecimals = tickDecimals((y.ticks[1] ?? y.hi) - (y.ticks[0] ?? y.lo));
  const tMin = Math.min(-1, n > 0 ? t[0]! : -1);
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
  const x = niceTicks(tMin, 0, 5);
  ctx.textAlign = 'center';
  ctx.textBaseline = 'top';
  for (const s of x.ticks) {
    if (s < tMin || s > 0) continue;
    const px = Math.round(xOf(s)) + 0.5;
    ctx.beginPath();
    ctx.moveTo(px, TOP);
    ctx.lineTo(px, TOP + plotH);
    ctx.stroke();
    ctx.fillText(`${Math.round(s)}s`, px, TOP + plotH + 4);
  }
  ctx.setLineDash([]);
  ctx.strokeStyle = AXIS;
  ctx.beginPath();
  ctx.moveTo(LEFT + 0.5, TOP);
  ctx.lineTo(LEFT + 0.5, TOP + plotH + 0.5);
  ctx.lineTo(LEFT + plotW, TOP + plotH + 0.5);
  ctx.stroke();

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
