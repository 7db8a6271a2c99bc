/**
 * Live line chart: the Dashboard's series redraw at 10 Hz over the window picked (1, 5 or
 * 15 minutes of the chart history: at most ~600 points a series, downsampled buckets drawn
 * as their mean with a faint min-max band). Data are columns (one Float64Array per series,
 * no per-point objects). The canvas is rasterized off the main thread (charts/ChartPainter:
 * a worker draws on an OffscreenCanvas and hands back a bitmap), because software
 * rasterization of six charts' lines and text was the largest part of the dashboard's
 * per-update work. No animation; unknown (NaN) values leave gaps. The legend's box has a
 * fixed height and `contain: strict`, so its 10 Hz value updates re-lay out only itself.
 * The header exports the window shown as CSV or PNG.
 */
import { memo, useEffect, useRef, useState } from 'react';
import { ChartPainter, sharedRasterizer } from '../charts/ChartPainter.js';
import { rasterSize, type LineChartFrame } from '../charts/drawLineChart.js';
import { FULL_RESOLUTION_MS } from '../../common/ChartHistory.js';
import type { ChartColumns } from '../stores/chartColumns.js';
import { ChartExportButtons } from './ChartExportButtons.js';

/** One line of a chart. */
export interface SeriesDef {
  /** Key of the value column. */
  key: string;
  /** Legend label. */
  label: string;
  color: string;
  /** Unit of the values, for exports: "tokens/s", "ms", "%". */
  unit: string;
}

/** Line colors, readable on the dark background. */
export const PALETTE = ['#5eb1ff', '#4cc38a', '#ffd166', '#ff6b6b', '#c792ea', '#89ddff', '#f78c6c', '#a3be8c'];

export interface LiveLineChartProps {
  /** Panel heading; also names the exported files. */
  title: string;
  data: ChartColumns;
  /** The newest value of each series (the legend's), which changes with every fold even while the drawn window does not. */
  latest: ReadonlyMap<string, number>;
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

const NO_VALUES = new Float64Array(0);

/** The frame the chart draws (and the PNG export redraws). */
function chartFrame(data: ChartColumns, series: readonly SeriesDef[], integerAxis: boolean, widthPx: number, heightPx: number): LineChartFrame {
  return {
    widthPx,
    heightPx,
    dpr: window.devicePixelRatio || 1,
    t: data.t,
    columns: series.map((s) => data.values.get(s.key) ?? NO_VALUES),
    bands: data.bucketMs > FULL_RESOLUTION_MS ? series.map((s) => ({ lo: data.min.get(s.key) ?? NO_VALUES, hi: data.max.get(s.key) ?? NO_VALUES })) : undefined,
    spanS: data.rangeMs / 1000,
    colors: series.map((s) => s.color),
    integerAxis,
  };
}

export const LiveLineChart = memo(function LiveLineChart({ title, data, latest, series, format, integerAxis = false, heightPx = 180, emptyText = 'no data reported yet', label }: LiveLineChartProps) {
  const wrap = useRef<HTMLDivElement>(null);
  const canvas = useRef<HTMLCanvasElement>(null);
  const painter = useRef<ChartPainter | null>(null);
  const [widthPx, setWidthPx] = useState(0);
  useEffect(() => {
    const el = wrap.current;
    if (!el) return;
    const ro = new ResizeObserver((entries) => setWidthPx(Math.floor(entries[0]?.contentRect.width ?? 0)));
    ro.observe(el);
    return () => ro.disconnect();
  }, []);
  const empty = !series.some((s) => data.values.get(s.key)?.some(Number.isFinite));
  // The canvas exists while there is something to draw; its painter lives as long.
  useEffect(() => {
    const ctx = canvas.current?.getContext('bitmaprenderer');
    if (empty || !ctx) return;
    const p = new ChartPainter(ctx, sharedRasterizer());
    painter.current = p;
    return () => {
      p.dispose();
      painter.current = null;
    };
  }, [empty]);
  useEffect(() => {
    const el = canvas.current;
    if (!el || !painter.current || widthPx <= 0) return;
    const frame = chartFrame(data, series, integerAxis, widthPx, heightPx);
    const { width, height } = rasterSize(frame);
    if (el.width !== width || el.height !== height) {
      el.width = width;
      el.height = height;
    }
    painter.current.paint(frame);
  }, [data, series, integerAxis, widthPx, heightPx, empty]);
  // Legend lines: about 6 entries fit a line of a half-width panel.
  const legendLines = Math.max(1, Math.ceil(series.length / 6));
  return (
    <div ref={wrap} style={{ width: '100%' }}>
      <div className="chart-head">
        <h3>{title}</h3>
        <ChartExportButtons title={title} data={data} series={series} disabled={empty} frame={() => chartFrame(data, series, integerAxis, Math.max(widthPx, 320), heightPx)} />
      </div>
      {empty ? (
        <div className="chart-empty" style={{ height: heightPx }}>
          {emptyText}
        </div>
      ) : (
        <canvas ref={canvas} role="img" aria-label={label} style={{ width: '100%', height: heightPx, display: 'block' }} />
      )}
      <div className="small chart-legend live" aria-live="off" style={{ height: `${legendLines * 1.5}em` }}>
        {series.map((s) => {
          const v = latest.get(s.key) ?? Number.NaN;
          return (
            <span key={s.key} style={{ color: s.color }}>
              ● {s.label}
              <span className="muted mono"> {!Number.isFinite(v) ? '–' : format ? format(v) : v}</span>
            </span>
          );
        })}
      </div>
    </div>
  );
});
