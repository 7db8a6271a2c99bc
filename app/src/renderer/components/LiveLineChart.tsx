/**
 * Live line chart on a canvas: the Dashboard's series redraw at 10 Hz with up to 600
 * points each, which takes well under a millisecond here, where an SVG chart library
 * re-renders hundreds of nodes per update. No animation; unknown (null) values leave gaps.
 */
import { memo, useEffect, useRef, useState } from 'react';
import { niceTicks, tickDecimals } from '../lib/niceTicks.js';

/** One line of a chart. */
export interface SeriesDef {
  /** Key of the value in each row. */
  key: string;
  /** Legend label. */
  label: string;
  color: string;
}

/** Line colors, readable on the dark background. */
export const PALETTE = ['#5eb1ff', '#4cc38a', '#ffd166', '#ff6b6b', '#c792ea', '#89ddff', '#f78c6c', '#a3be8c'];

export interface LiveLineChartProps {
  /** Rows oldest-first; `t` is seconds relative to the newest row (<= 0). */
  data: readonly Record<string, number | null>[];
  series: readonly SeriesDef[];
  format?: (v: number) => string;
  /** The series are counts: y ticks stay whole numbers. */
  integerAxis?: boolean;
  heightPx?: number;
  /** Shown instead of empty axes when no series has a value. */
  emptyText?: string;
  /** Accessible name. */
  label: string;
}

const AXIS = '#9aa3b2';
const GRID = '#2c323c';
const LEFT = 56;
const BOTTOM = 18;
const TOP = 6;
const RIGHT = 8;

function draw(canvas: HTMLCanvasElement, widthPx: number, heightPx: number, p: LiveLineChartProps): void {
  const dpr = window.devicePixelRatio || 1;
  if (canvas.width !== Math.round(widthPx * dpr) || canvas.height !== Math.round(heightPx * dpr)) {
    canvas.width = Math.round(widthPx * dpr);
    canvas.height = Math.round(heightPx * dpr);
  }
  const ctx = canvas.getContext('2d');
  if (!ctx) return;
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  ctx.clearRect(0, 0, widthPx, heightPx);
  const { data, series } = p;
  let min = Infinity;
  let max = -Infinity;
  for (const row of data) {
    for (const s of series) {
      const v = row[s.key];
      if (v === null || v === undefined || !Number.isFinite(v)) continue;
      if (v < min) min = v;
      if (v > max) max = v;
    }
  }
  const y = niceTicks(Math.min(0, min), Math.max(max, 0), 5, p.integerAxis ? 1 : 0);
  // Axis labels carry as many decimals as the tick step needs (the legend keeps `format`).
  const yDecimals = tickDecimals((y.ticks[1] ?? y.hi) - (y.ticks[0] ?? y.lo));
  const tMin = Math.min(-1, data[0]?.['t'] ?? -1);
  const plotW = Math.max(10, widthPx - LEFT - RIGHT);
  const plotH = Math.max(10, heightPx - TOP - BOTTOM);
  const xOf = (t: number): number => LEFT + ((t - tMin) / (0 - tMin)) * plotW;
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
  for (const t of x.ticks) {
    if (t < tMin || t > 0) continue;
    const px = Math.round(xOf(t)) + 0.5;
    ctx.beginPath();
    ctx.moveTo(px, TOP);
    ctx.lineTo(px, TOP + plotH);
    ctx.stroke();
    ctx.fillText(`${Math.round(t)}s`, px, TOP + plotH + 4);
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
  for (const s of series) {
    ctx.strokeStyle = s.color;
    ctx.beginPath();
    let pen = false;
    for (const row of data) {
      const v = row[s.key];
      if (v === null || v === undefined || !Number.isFinite(v)) {
        pen = false;
        continue;
      }
      const px = xOf(row['t'] ?? 0);
      const py = yOf(v);
      if (pen) ctx.lineTo(px, py);
      else ctx.moveTo(px, py);
      pen = true;
    }
    ctx.stroke();
  }
}

export const LiveLineChart = memo(function LiveLineChart(props: LiveLineChartProps) {
  const { data, series, format, heightPx = 180, emptyText = 'no data reported yet', label } = props;
  const wrap = useRef<HTMLDivElement>(null);
  const canvas = useRef<HTMLCanvasElement>(null);
  const [widthPx, setWidthPx] = useState(0);
  useEffect(() => {
    const el = wrap.current;
    if (!el) return;
    const ro = new ResizeObserver((entries) => setWidthPx(Math.floor(entries[0]?.contentRect.width ?? 0)));
    ro.observe(el);
    return () => ro.disconnect();
  }, []);
  const empty = !data.some((row) => series.some((s) => row[s.key] !== null && row[s.key] !== undefined));
  useEffect(() => {
    if (canvas.current && widthPx > 0 && !empty) draw(canvas.current, widthPx, heightPx, props);
  });
  const last = data[data.length - 1];
  return (
    <div ref={wrap} style={{ width: '100%' }}>
      {empty ? (
        <div className="chart-empty" style={{ height: heightPx }}>
          {emptyText}
        </div>
      ) : (
        <canvas ref={canvas} role="img" aria-label={label} style={{ width: '100%', height: heightPx, display: 'block' }} />
      )}
      <div className="row small" aria-live="off" style={{ gap: '0.9rem', justifyContent: 'center' }}>
        {series.map((s) => {
          const v = last?.[s.key];
          return (
            <span key={s.key} style={{ color: s.color }}>
              ● {s.label}
              <span className="muted mono"> {v === null || v === undefined ? '–' : format ? format(v) : v}</span>
            </span>
          );
        })}
      </div>
    </div>
  );
});
