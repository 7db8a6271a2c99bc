/**
 * Layers x columns heatmap on a canvas: the cells are rasterized into an ImageData
 * (lib/heatPixels) and put in one call, so 48 layers x 16 columns cost a fraction of a
 * millisecond per redraw. Re-renders only when its values array changes (memo).
 */
import { memo, useEffect, useRef } from 'react';
import { heatSize, paintHeat, type HeatLayout } from '../lib/heatPixels.js';

export interface HeatmapProps {
  /** Accessible name, also the panel's test id suffix. */
  title: string;
  /** Number of rows (decoder layers), drawn top to bottom. */
  rows: number;
  /** Column labels (e.g. "A0 s0"). */
  columns: readonly string[];
  /** Row-major values, rows x columns.length; NaN draws as empty. */
  values: ArrayLike<number>;
  /** Formats a value for the summary line. */
  format: (v: number) => string;
  /** Height of one row in CSS pixels (default: fit about 160 px, 3..16 px per row). */
  rowHeightPx?: number;
}

const CELL_W = 12;

export const Heatmap = memo(function Heatmap({ title, rows, columns, values, format, rowHeightPx }: HeatmapProps) {
  const rowPx = rowHeightPx ?? Math.min(16, Math.max(3, Math.floor(160 / Math.max(1, rows))));
  const canvasRef = useRef<HTMLCanvasElement>(null);
  const raster = useRef<ImageData | null>(null);
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
    const ctx = canvas?.getContext('2d');
    if (!canvas || !ctx) return;
    const layout: HeatLayout = { rows, cols, cellW: CELL_W, cellH: rowPx };
    const { width, height } = heatSize(layout);
    // Resizing a canvas reallocates its backing store: only when the grid's shape changes.
    if (canvas.width !== width || canvas.height !== height) {
      canvas.width = width;
      canvas.height = height;
    }
    if (raster.current?.width !== width || raster.current.height !== height) raster.current = new ImageData(width, height);
    paintHeat(new Uint32Array(raster.current.data.buffer), layout, values, max);
    ctx.putImageData(raster.current, 0, 0);
  }, [rows, cols, values, max, rowPx]);

  const columnText = cols > 0 ? columns.join(' | ') : 'no data yet';
  return (
    <div className="heatmap" data-testid={`heatmap-${title}`} data-nonzero={nonZero}>
      <div className="row small muted" style={{ flexWrap: 'nowrap' }}>
        <span>{title}</span>
        <span className="ellipsis">· layers 0–{Math.max(0, rows - 1)} top to bottom</span>
        <span className="spacer" />
        <span className="legend-bar" aria-hidden="true" />
      </div>
      <div className="small muted mono live">
        max {format(max)} · total {format(total)}
      </div>
      <div className="small muted mono ellipsis" aria-hidden="true" title={columnText}>
        {columnText}
      </div>
      <canvas
        ref={canvasRef}
        role="img"
        aria-label={`${title}: ${rows} layers x ${cols} columns, max ${format(max)}, total ${format(total)}`}
        style={{ height: `${Math.max(rows * rowPx, 20)}px` }}
      />
    </div>
  );
});
