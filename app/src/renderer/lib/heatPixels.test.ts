import { describe, expect, it } from 'vitest';
import { HEAT_BG, HEAT_LUT, heatRgb, heatSize, labelStep, packRgba, paintHeat, rowHeightFor } from './heatPixels.js';

describe('heat palette', () => {
  it('runs from the background stop to the hot stop and clamps', () => {
    expect(heatRgb(0)).toEqual([15, 17, 21]);
    expect(heatRgb(1)).toEqual([255, 107, 107]);
    expect(heatRgb(2)).toEqual(heatRgb(1));
    expect(heatRgb(Number.NaN)).toEqual(heatRgb(0));
    expect(HEAT_LUT).toHaveLength(256);
    expect(HEAT_LUT[255]).toBe(packRgba(255, 107, 107));
  });

  it('packs RGBA bytes in ImageData order (little-endian)', () => {
    const bytes = new Uint8ClampedArray(new Uint32Array([packRgba(1, 2, 3)]).buffer);
    expect([...bytes]).toEqual([1, 2, 3, 255]);
  });
});

describe('paintHeat', () => {
  const layout = { rows: 2, cols: 3, cellW: 5, cellH: 4 };
  const { width, height } = heatSize(layout);

  it('fills each cell with its color, leaves 1 px gaps and NaN cells as background', () => {
    const px = new Uint32Array(width * height);
    paintHeat(px, layout, [0, 5, 10, Number.NaN, 10, 2.5], 10);
    const at = (x: number, y: number): number => px[y * width + x]!;
    expect(at(0, 0)).toBe(HEAT_LUT[0]);
    expect(at(5, 0)).toBe(HEAT_LUT[128]);
    expect(at(13, 2)).toBe(HEAT_LUT[255]);
    expect(at(4, 0)).toBe(HEAT_BG); // vertical gap
    expect(at(0, 3)).toBe(HEAT_BG); // horizontal gap
    expect(at(1, 5)).toBe(HEAT_BG); // NaN cell (row 1, col 0)
    expect(at(6, 5)).toBe(HEAT_LUT[255]);
    expect(at(11, 6)).toBe(HEAT_LUT[64]);
  });

  it('paints everything at the cold end when max is 0 and rejects a short raster', () => {
    const px = new Uint32Array(width * height);
    paintHeat(px, layout, [0, 0, 0, 0, 0, 0], 0);
    expect(px[0]).toBe(HEAT_LUT[0]);
    expect(() => paintHeat(new Uint32Array(10), layout, [], 1)).toThrow(/too small/);
  });

  it('sizes rows from the layer count and spaces the layer numbers', () => {
    expect(rowHeightFor(4)).toBe(24);
    expect(rowHeightFor(48)).toBe(7);
    expect(rowHeightFor(94)).toBe(6);
    expect(48 * rowHeightFor(48)).toBeLessThanOrEqual(360);
    expect(labelStep(24, 14)).toBe(1);
    expect(labelStep(7, 14)).toBe(2);
    expect(labelStep(6, 14)).toBe(4);
  });
});
