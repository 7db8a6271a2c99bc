/**
 * Heatmap rasterizer: paints a rows x cols grid of values into RGBA pixels (one
 * Uint32 per pixel, as ImageData holds them on little-endian machines) through a
 * 256-entry color table. One putImageData per redraw replaces ~800 fillRect calls, each
 * with a CSS color string to parse, which took most of the Dashboard's fold time.
 */

/** Dark-to-hot palette stops (RGB). */
export const HEAT_STOPS: readonly (readonly [number, number, number])[] = [
  [15, 17, 21],
  [29, 78, 137],
  [47, 143, 240],
  [255, 209, 102],
  [255, 107, 107],
];

/** The palette color at t in [0, 1], as [r, g, b]. */
export function heatRgb(t: number): [number, number, number] {
  const x = Math.min(1, Math.max(0, Number.isFinite(t) ? t : 0)) * (HEAT_STOPS.length - 1);
  const i = Math.min(HEAT_STOPS.length - 2, Math.floor(x));
  const f = x - i;
  const a = HEAT_STOPS[i]!;
  const b = HEAT_STOPS[i + 1]!;
  return [0, 1, 2].map((k) => Math.round(a[k]! + (b[k]! - a[k]!) * f)) as [number, number, number];
}

/** Packs opaque RGB into the Uint32 an ImageData's buffer holds on little-endian hosts. */
export const packRgba = (r: number, g: number, b: number): number => ((255 << 24) | (b << 16) | (g << 8) | r) >>> 0;

/** 256 packed palette colors, index = round(t * 255). */
export const HEAT_LUT: Uint32Array = Uint32Array.from({ length: 256 }, (_, i) => packRgba(...heatRgb(i / 255)));
/** Background (no data, and the 1 px gaps between cells). */
export const HEAT_BG = packRgba(...HEAT_STOPS[0]!);

export interface HeatLayout {
  rows: number;
  cols: number;
  /** Cell size in pixels (the last column/row of each cell is a gap when > 3). */
  cellW: number;
  cellH: number;
}

/** Pixel size of the raster for a layout. */
export const heatSize = (l: HeatLayout): { width: number; height: number } => ({ width: Math.max(1, l.cols * l.cellW), height: Math.max(1, l.rows * l.cellH) });

/**
 * Paints values (row-major, rows x cols; NaN = no data) scaled by max into pixels
 * (width x height of heatSize(layout)).
 */
export function paintHeat(pixels: Uint32Array, layout: HeatLayout, values: ArrayLike<number>, max: number): void {
  const { rows, cols, cellW, cellH } = layout;
  const width = cols * cellW;
  if (pixels.length < width * rows * cellH) throw new Error(`heatmap raster too small: ${pixels.length} pixels for ${width} x ${rows * cellH}`);
  pixels.fill(HEAT_BG);
  const fillW = cellW > 3 ? cellW - 1 : cellW;
  const fillH = cellH > 3 ? cellH - 1 : cellH;
  const scale = max > 0 ? 255 / max : 0;
  for (let r = 0; r < rows; r++) {
    for (let c = 0; c < cols; c++) {
      const v = values[r * cols + c] ?? Number.NaN;
      if (!Number.isFinite(v)) continue;
      const color = HEAT_LUT[Math.min(255, Math.max(0, Math.round(v * scale)))]!;
      const x0 = c * cellW;
      for (let y = r * cellH, y1 = y + fillH; y < y1; y++) pixels.fill(color, y * width + x0, y * width + x0 + fillW);
    }
  }
}

/** Row height (CSS px) for a layer count: about 360 px in all, 6..24 px a row, so 4 and 48 layers both read. */
export function rowHeightFor(rows: number): number {
  return Math.min(24, Math.max(6, Math.floor(360 / Math.max(1, rows))));
}

/** Every how many rows a label fits: the first of 1, 2, 4, 8, ... that leaves `minPx` between labels. */
export function labelStep(cellPx: number, minPx: number): number {
  let k = 1;
  while (k * cellPx < minPx && k < 1024) k *= 2;
  return k;
}
