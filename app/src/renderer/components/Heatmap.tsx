/**
 * Layers x columns heatmap drawn on a canvas (one fillRect per cell): 48 layers x 16
 * columns redraws in well under a millisecond, where an SVG/recharts grid would not.
 */
import { useEffect, useRef } from 'react';

export interface HeatmapProps {
  /** Accessible name, also the panel's test id suffix. */
  title: string;
  /** Number of rows (decoder layers), drawn top to bottom. */
  rows: number;
  /** Column labels (e.g. "A0 s0 A->F"). */
  columns: readonly string[];
  /** Row-major values, rows x columns.length; NaN draws as empty. */
  values: ArrayLike<number>;
  /** Formats a value for the tooltip and the summary line. */
  format: (v: number) => string;
  /** Height of one row in CSS pixels (default: fit about 160 px, 3..16 px per row). */
  rowHeightPx?: number;
}

const STOPS: [number, number, number][] = [
  [15, 17, 21],
  [29, 78, 137],
  [47, 143, 240],
  [255, 209, 102],
  [255, 107, 107],
];

/** Maps t in [0, 1] onto the dark-to-hot palette. */
export function heatColor(t: number): string {
  const x = Math.min(1, Math.max(0, t)) * (STOPS.length - 1);
  const i = Math.min(STOPS.length - 2, Math.floor(x));
  const f = x - i;
  const a = STOPS[i] ?? STOPS[0]!;
  const b = STOPS[i + 1] ?? a;
  const c = (k: 0 | 1 | 2): number => Math.round(a[k] + (b[k] - a[k]) * f);
  return `rgb(${c(0)},${c(1)},${c(2)})`;
}

export function Heatmap({ title, rows, columns, values, format, rowHeightPx }: HeatmapProps) {
  const rowPx = rowHeightPx ?? Math.min(16, Math.max(3, Math.floor(160 / Math.max(1, rows))));
  const canvasRef = useRef<HTMLCanvasElement>(null);
  const cols = columns.length;
  let max = 0;
  let total = 0;
  let nonZero = 0;
  for (let i = 0; i < rows * cols; i++) {
    const v = values[i] ?? Number.NaN;
    if (Number.isFinite(v)) {
      if (v > max) max = v;
      total += v;
      if (v > 0) nonZero += 1;
    }
  }

  useEffect(() => {
    const canvas = canvasRef.current;
    if (!canvas) return;
    const ctx = canvas.getContext('2d');
    if (!ctx) return;
    const cellW = 12;
    canvas.width = Math.max(1, cols * cellW);
    canvas.height = Math.max(1, rows * rowPx);
    ctx.fillStyle = '#0f1115';
    ctx.fillRect(0, 0, canvas.width, canvas.height);
    for (let r = 0; r < rows; r++) {
      for (let c = 0; c < cols; c++) {
        const v = values[r * cols + c] ?? Number.NaN;
        if (!Number.isFinite(v)) continue;
        ctx.fillStyle = heatColor(max > 0 ? v / max : 0);
        ctx.fillRect(c * cellW, r * rowPx, cellW - 1, rowPx - (rowPx > 3 ? 1 : 0));
      }
    }
  }, [rows, cols, values, max, rowPx]);

  return (
    <div className="heatmap" data-testid={`heatmap-${title}`} data-nonzero={nonZero}>
      <div className="row small muted">
        <span>{title}</span>
        <span>· layers 0–{Math.max(0, rows - 1)} top to bottom</span>
        <span className="spacer" />
        <span>max {format(max)}</span>
        <span>· total {format(total)}</span>
        <span className="legend-bar" aria-hidden="true" />
      </div>
      <div className="small muted mono ellipsis" aria-hidden="true" title={columns.join(' | ')}>
        {cols > 0 ? columns.join(' | ') : 'no data yet'}
      </div>
      <canvas
        ref={canvasRef}
        role="img"
        aria-label={`${title}: ${rows} layers x ${cols} columns, max ${format(max)}, total ${format(total)}`}
        style={{ height: `${Math.max(rows * rowPx, 20)}px` }}
      />
    </div>
  );
}
