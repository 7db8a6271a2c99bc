/**
 * Layers x (rank, stage) heatmap on a canvas, with labelled axes: layers down the left
 * (every k-th numbered, k chosen so numbers never crowd), each rank over its stage columns
 * and each stage under its column (labels and canvas share one grid, so they line up), the value under the
 * pointer on hover, and a colour scale from 0 to the max. Rows are sized from the layer
 * count (6..24 px), so 4 layers and 48 layers both read well. The cells are rasterized
 * into an ImageData (lib/heatPixels) and put in one call: 48 layers x 16 columns cost a
 * fraction of a millisecond per redraw. Re-renders only when its values change (memo).
 * A note under the title says what the numbers are; a column may say why its cells are
 * empty (shown on hover and under the map, never as a bare dark cell).
 */
import { memo, useEffect, useRef, useState, type MouseEvent } from 'react';
import { heatSize, labelStep, paintHeat, rowHeightFor, type HeatLayout } from '../lib/heatPixels.js';

export interface HeatmapProps {
  /** Accessible name, also the panel's test id suffix. */
  title: string;
  /** Number of rows (decoder layers), drawn top to bottom. */
  rows: number;
  /** Column labels (e.g. "A0 s0"). */
  columns: readonly string[];
  /** Row-major values, rows x columns.length; NaN draws as empty. */
  values: ArrayLike<number>;
  /** Formats a value (scale, summary, hover). */
  format: (v: number) => string;
  /** Height of one row in CSS pixels (default: from the row count, 6..24 px). */
  rowHeightPx?: number;
  /** What the numbers are (e.g. how a wire time was measured), under the title. */
  note?: string;
  /** Per column: why its cells are empty (undefined where they hold numbers). */
  columnNotes?: readonly (string | undefined)[];
  /** Row labels (e.g. "P0") instead of layer numbers. */
  rowLabels?: readonly string[];
  /** What the rows are (default "layer"). */
  yAxis?: string;
  /** What the columns are (default: rank × stage). */
  xAxis?: string;
  /** More about a cell on hover, after its value (e.g. the rate of a link). */
  cellDetail?: (row: number, col: number) => string | undefined;
}

const CELL_W = 12;

/** Consecutive columns of one rank ("A0 s0", "A0 s1") as one header cell. */
function columnGroups(columns: readonly string[]): { rank: string; start: number; count: number }[] {
  const groups: { rank: string; start: number; count: number }[] = [];
  columns.forEach((c, i) => {
    const rank = c.split(' ')[0] ?? c;
    const last = groups.at(-1);
    if (last && last.rank === rank) last.count += 1;
    else groups.push({ rank, start: i, count: 1 });
  });
  return groups;
}

/** "A0 s0, A1 s0: why" lines for the columns that carry a note, one per distinct note. */
function emptyColumnLines(columns: readonly string[], notes: readonly (string | undefined)[]): string[] {
  const byNote = new Map<string, string[]>();
  notes.forEach((n, i) => {
    if (n !== undefined) byNote.set(n, [...(byNote.get(n) ?? []), columns[i] ?? `column ${i}`]);
  });
  return [...byNote].map(([note, cols]) => `${cols.join(', ')}: ${note}`);
}

const X_AXIS = 'rank × stage (A = attention, F = FFN; s = DBO stage)';

export const Heatmap = memo(function Heatmap({ title, rows, columns, values, format, rowHeightPx, note, columnNotes, rowLabels, yAxis = 'layer', xAxis = X_AXIS, cellDetail }: HeatmapProps) {
  const rowPx = rowHeightPx ?? rowHeightFor(rows);
  const canvasRef = useRef<HTMLCanvasElement>(null);
  const raster = useRef<ImageData | null>(null);
  const [hover, setHover] = useState<{ row: number; col: number; x: number; y: number } | null>(null);
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

  const onMove = (e: MouseEvent<HTMLCanvasElement>): void => {
    const r = e.currentTarget.getBoundingClientRect();
    const col = Math.floor(((e.clientX - r.left) / r.width) * cols);
    const row = Math.floor((e.clientY - r.top) / rowPx);
    if (col < 0 || col >= cols || row < 0 || row >= rows) return setHover(null);
    setHover({ row, col, x: e.clientX - r.left, y: e.clientY - r.top });
  };
  const hoverValue = hover ? values[hover.row * cols + hover.col] : undefined;
  const hoverNote = hover ? columnNotes?.[hover.col] : undefined;
  const hoverDetail = hover ? cellDetail?.(hover.row, hover.col) : undefined;
  const rowName = (row: number): string => rowLabels?.[row] ?? `${yAxis} ${row}`;
  const emptyLines = columnNotes ? emptyColumnLines(columns, columnNotes) : [];
  const heightPx = Math.max(rows * rowPx, 20);
  const yStep = labelStep(rowPx, 14);
  // Column labels "A0 s1": the rank over its stage columns, then the stage under each column.
  const groups = columnGroups(columns);
  const stagesShown = groups.some((g) => g.count > 1);

  return (
    <div className="heatmap" data-testid={`heatmap-${title}`} data-nonzero={nonZero} data-rows={rows} data-row-px={rowPx} data-note={note}>
      <div className="row small muted" style={{ flexWrap: 'nowrap' }}>
        <span>{title}</span>
        <span className="spacer" />
        <span className="mono">0</span>
        <span className="legend-bar" aria-hidden="true" />
        <span className="mono">{format(max)}</span>
      </div>
      {note && (
        <div className="small muted" data-testid="heatmap-note">
          {note}
        </div>
      )}
      <div className="small muted mono live">
        max {format(max)} · total {format(total)}
      </div>
      {cols === 0 ? (
        <p className="muted small">no data yet</p>
      ) : (
        <div className="heat-grid">
          <span className="heat-axis-y small muted" title={rowLabels ? `${yAxis}, top to bottom` : 'decoder layer, top to bottom'}>
            {yAxis}
          </span>
          <div className="heat-cols small muted mono" style={{ gridTemplateColumns: `repeat(${cols}, minmax(0, 1fr))` }} aria-hidden="true" data-testid="heatmap-columns">
            {groups.map((g) => (
              <span key={`r${g.start}`} className="ellipsis heat-col-rank" style={{ gridColumn: `${g.start + 1} / span ${g.count}` }} title={g.rank}>
                {g.rank}
              </span>
            ))}
            {stagesShown &&
              columns.map((c, i) => (
                <span key={`s${c}`} className="ellipsis" style={{ gridColumn: `${i + 1}`, gridRow: 2 }} title={c}>
                  {c.split(' ')[1] ?? ''}
                </span>
              ))}
          </div>
          <div className="heat-rows small muted mono" style={{ height: `${heightPx}px` }} aria-hidden="true">
            {Array.from({ length: Math.ceil(rows / yStep) }, (_, i) => i * yStep).map((layer) => (
              <span key={layer} style={{ top: `${layer * rowPx + rowPx / 2}px` }}>
                {rowLabels?.[layer] ?? layer}
              </span>
            ))}
          </div>
          <div className="heat-canvas">
            <canvas
              ref={canvasRef}
              role="img"
              aria-label={`${title}: ${rows} ${rowLabels ? `rows (${yAxis})` : 'layers'} x ${cols} columns (${rowLabels ? xAxis : 'rank x stage'}), max ${format(max)}, total ${format(total)}`}
              style={{ height: `${heightPx}px` }}
              onMouseMove={onMove}
              onMouseLeave={() => setHover(null)}
              data-testid="heatmap-canvas"
            />
            {hover && (
              <div className="heat-tip small mono" style={{ left: hover.x + 12, top: hover.y + 12 }} data-testid="heatmap-tip">
                {rowName(hover.row)} · {columns[hover.col]}: {hoverValue !== undefined && Number.isFinite(hoverValue) ? format(hoverValue) : (hoverNote ?? 'no data')}
                {hoverDetail !== undefined && ` · ${hoverDetail}`}
              </div>
            )}
          </div>
          <span />
          <span className="heat-axis-x small muted">{xAxis}</span>
        </div>
      )}
      {emptyLines.map((line) => (
        <div key={line} className="small muted" data-testid="heatmap-empty-columns">
          {line}
        </div>
      ))}
    </div>
  );
});
