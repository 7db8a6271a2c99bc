import { describe, expect, it } from 'vitest';
import { drawLineChart, rasterSize, type LineChartFrame } from './drawLineChart.js';

/** Records the path and text calls of a 2D context. */
function recorder() {
  const ops: string[] = [];
  const ctx = new Proxy(
    { ops },
    {
      get(target, prop) {
        if (prop === 'ops') return ops;
        if (typeof prop !== 'string') return undefined;
        return (...args: unknown[]) => ops.push(`${prop}(${args.map((a) => (typeof a === 'number' ? Math.round(a) : JSON.stringify(a))).join(',')})`);
      },
      set(_t, prop, value) {
        if (prop === 'strokeStyle') ops.push(`stroke=${String(value)}`);
        return true;
      },
    },
  );
  return ctx as unknown as CanvasRenderingContext2D & { ops: string[] };
}

const frame = (columns: number[][], extra: Partial<LineChartFrame> = {}): LineChartFrame => ({
  widthPx: 264,
  heightPx: 124,
  dpr: 2,
  t: new Float64Array([-2, -1, 0]),
  columns: columns.map((c) => new Float64Array(c)),
  colors: ['#111', '#222'],
  integerAxis: false,
  ...extra,
}) as LineChartFrame;

describe('drawLineChart', () => {
  it('draws one polyline per series, breaking it at unknown values', () => {
    const ctx = recorder();
    drawLineChart(ctx, frame([[1, Number.NaN, 3]]));
    const line = ctx.ops.slice(ctx.ops.indexOf('stroke=#111'));
    // Two moveTo calls (start, and after the NaN gap), no lineTo between them.
    expect(line.filter((o) => o.startsWith('moveTo'))).toHaveLength(2);
    expect(line.filter((o) => o.startsWith('lineTo'))).toHaveLength(0);
    expect(ctx.ops[0]).toBe('setTransform(2,0,0,2,0,0)');
  });

  it('labels the y axis with nice ticks including zero and the x axis in seconds', () => {
    const ctx = recorder();
    drawLineChart(ctx, frame([[5, 7, 9], [1, 2, 3]]));
    const texts = ctx.ops.filter((o) => o.startsWith('fillText')).map((o) => /fillText\("([^"]*)"/.exec(o)![1]);
    expect(texts).toContain('0');
    expect(texts).toContain('10');
    expect(texts).toContain('-2s');
    expect(texts).toContain('0s');
    expect(ctx.ops).toContain('stroke=#222');
  });

  it('spans the x axis over the range picked, in minutes past two of them', () => {
    const ctx = recorder();
    drawLineChart(ctx, frame([[1, 2, 3]], { spanS: 900 }));
    const texts = ctx.ops.filter((o) => o.startsWith('fillText')).map((o) => /fillText\("([^"]*)"/.exec(o)![1]);
    expect(texts).toEqual(expect.arrayContaining(['-15m', '-10m', '-5m', '0m']));
    expect(texts.some((x) => x?.endsWith('s'))).toBe(false);
  });

  it('fills a band from each point\'s min to its max under the line of downsampled points', () => {
    const ctx = recorder();
    const band = { lo: new Float64Array([0, 1, Number.NaN]), hi: new Float64Array([4, 5, Number.NaN]) };
    drawLineChart(ctx, frame([[1, 2, 3]], { bands: [band] }));
    // One band over the two known points: 2 points along the top, 2 back along the bottom.
    expect(ctx.ops.filter((o) => o === 'fill()')).toHaveLength(1);
    const fillAt = ctx.ops.indexOf('fill()');
    const path = ctx.ops.slice(ctx.ops.lastIndexOf('beginPath()', fillAt), fillAt);
    expect(path.filter((o) => o.startsWith('lineTo'))).toHaveLength(3);
    // The y axis reaches the band's max (5), not only the line's (3).
    const yTicks = ctx.ops.filter((o) => o.startsWith('fillText')).map((o) => Number(/fillText\("([^"]*)"/.exec(o)![1]));
    expect(Math.max(...yTicks.filter(Number.isFinite))).toBeGreaterThanOrEqual(5);
  });

  it('sizes the raster in device pixels', () => {
    expect(rasterSize({ widthPx: 100.4, heightPx: 50, dpr: 1.5 })).toEqual({ width: 151, height: 75 });
    expect(rasterSize({ widthPx: 0, heightPx: 0, dpr: 1 })).toEqual({ width: 1, height: 1 });
  });
});
