import { describe, expect, it } from 'vitest';
import { packFrame, unpackFrame } from './packFrame.js';
import type { LineChartFrame } from './drawLineChart.js';

const base = { widthPx: 200, heightPx: 100, dpr: 2, colors: ['#111', '#222'], integerAxis: false, spanS: 60 };

describe('packFrame', () => {
  it('packs every array into one buffer and unpacks the same frame', () => {
    const shared = new Float64Array([9, 9, 1, 2, 3, 9]);
    const f: LineChartFrame = {
      ...base,
      t: new Float64Array([-2, -1, 0]),
      // A view into a larger buffer, as a history window's columns are.
      columns: [shared.subarray(2, 5), new Float64Array([4, Number.NaN, 6])],
      bands: [
        { lo: new Float64Array([0, 1, 2]), hi: new Float64Array([2, 3, 4]) },
        { lo: new Float64Array([3, 3, 3]), hi: new Float64Array([7, 7, 7]) },
      ],
    };
    const p = packFrame(f);
    expect(p.data.length).toBe(3 * 7);
    // Only the frame's values travel: no part of the larger buffer.
    expect(p.data.buffer.byteLength).toBe(3 * 7 * 8);
    const back = unpackFrame(structuredClone(p));
    expect(back).toEqual({ ...f, columns: [new Float64Array([1, 2, 3]), f.columns[1]] });
  });

  it('fills a column shorter than the times (no values) with NaN, and leaves bands out when there are none', () => {
    const p = packFrame({ ...base, t: new Float64Array([-1, 0]), columns: [new Float64Array(0)] });
    const back = unpackFrame(p);
    expect([...back.columns[0]!].every(Number.isNaN)).toBe(true);
    expect(back.bands).toBeUndefined();
  });
});
