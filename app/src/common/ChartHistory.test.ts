import { describe, expect, it } from 'vitest';
import { BRIDGE_MAX_MESSAGE_BYTES, chartHistorySchema } from '@afd/shared';
import { CHART_TIERS, ChartHistory } from './ChartHistory.js';
import { syntheticHistory } from '../renderer/testing/syntheticHistory.js';

/** Points every `stepMs` from t0 for `count` points; value i at point i. */
function fill(h: ChartHistory, count: number, stepMs = 100, t0 = 1_000_000): void {
  for (let i = 0; i < count; i++) h.push({ tMs: t0 + i * stepMs, values: { v: i } });
}

describe('ChartHistory', () => {
  it('keeps memory bounded: 20 minutes or 2 more hours at 10 Hz hold the same number of buckets', () => {
    const h = new ChartHistory();
    fill(h, 12_000);
    const after20 = h.bucketCount;
    fill(h, 72_000, 100, 1_000_000 + 12_000 * 100);
    expect(h.bucketCount).toBe(after20);
    // 601 + 301 + 451: each tier's span plus its open bucket.
    expect(after20).toBe(CHART_TIERS.reduce((n, t) => n + t.spanMs / t.bucketMs + 1, 0));
  });

  it('reads the last minute at full resolution, 5 and 15 minutes in 1 s and 2 s buckets', () => {
    const h = new ChartHistory();
    fill(h, 9_000); // 15 minutes at 10 Hz
    const w1 = h.window(60_000);
    expect(w1.bucketMs).toBe(100);
    expect(w1.tMs.length).toBe(601); // both ends inclusive
    expect(w1.mean.get('v')![600]).toBe(8_999);
    const w5 = h.window(300_000);
    expect(w5.bucketMs).toBe(1_000);
    expect(h.bucketMsFor(300_000)).toBe(1_000);
    expect(w5.tMs.length).toBeLessThanOrEqual(301);
    expect(w5.tMs.length).toBeGreaterThanOrEqual(300);
    const w15 = h.window(900_000);
    expect(w15.bucketMs).toBe(2_000);
    expect(w15.tMs.length).toBeLessThanOrEqual(451);
    // The whole 15 minutes are there: the oldest bucket holds the first points.
    expect(w15.min.get('v')![0]).toBe(0);
    expect(w15.tMs[w15.tMs.length - 1]).toBe(1_000_000 + 8_999 * 100);
    // Never more than 600 points whatever the range.
    for (const r of [1_000, 60_000, 300_000, 900_000, 3_600_000]) expect(h.window(r).tMs.length).toBeLessThanOrEqual(601);
  });

  it('buckets points into count, mean, min and max, the bucket time being its newest point', () => {
    const h = new ChartHistory([{ bucketMs: 1_000, spanMs: 10_000 }]);
    // Slot 1 (1000..1999): 2, 8, 5; slot 2: 7.
    h.push({ tMs: 1_000, values: { v: 2 } });
    h.push({ tMs: 1_400, values: { v: 8 } });
    h.push({ tMs: 1_900, values: { v: 5, w: 1 } });
    h.push({ tMs: 2_000, values: { v: 7 } });
    const w = h.window(10_000);
    expect([...w.tMs]).toEqual([1_900, 2_000]);
    expect([...w.mean.get('v')!]).toEqual([5, 7]);
    expect([...w.min.get('v')!]).toEqual([2, 7]);
    expect([...w.max.get('v')!]).toEqual([8, 7]);
    // A series missing from a bucket is unknown there (NaN), not zero.
    expect(w.mean.get('w')![0]).toBe(1);
    expect(Number.isNaN(w.mean.get('w')![1]!)).toBe(true);
  });

  it('gives the newest point\'s values as latest, whatever the range', () => {
    const h = new ChartHistory();
    h.push({ tMs: 1_000, values: { v: 1 } });
    h.push({ tMs: 1_100, values: { v: 9 } });
    expect([...h.window(900_000).mean.get('v')!]).toEqual([5]);
    expect(h.latest().get('v')).toBe(9);
    expect(new ChartHistory().latest().size).toBe(0);
  });

  it('leaves NaN out of the statistics and drops points older than the newest', () => {
    const h = new ChartHistory([{ bucketMs: 1_000, spanMs: 10_000 }]);
    h.push({ tMs: 1_000, values: { v: Number.NaN } });
    h.push({ tMs: 1_100, values: { v: 4 } });
    h.push({ tMs: 1_050, values: { v: 100 } });
    expect([...h.window(10_000).mean.get('v')!]).toEqual([4]);
    expect(h.newestMs).toBe(1_100);
  });

  it('selects the range back from the newest point, not from the oldest', () => {
    const h = new ChartHistory();
    fill(h, 1_200, 100, 0); // 2 minutes
    const w = h.window(60_000);
    expect(w.tMs[0]).toBe(119_900 - 60_000);
    // The first 2 s bucket: its newest point is 1.9 s in.
    expect(h.window(900_000).tMs[0]).toBe(1_900);
    expect(new ChartHistory().window(60_000).tMs).toHaveLength(0);
  });

  it('goes over the wire (JSON, the bridge schema) and comes back the same', () => {
    const h = new ChartHistory();
    fill(h, 3_000);
    h.push({ tMs: 2_000_000, values: { v: Number.NaN, u: 3 } });
    const wire = chartHistorySchema.parse(JSON.parse(JSON.stringify(h.toData())));
    const back = ChartHistory.fromData(wire);
    for (const r of [60_000, 300_000, 900_000]) expect(back.window(r)).toEqual(h.window(r));
    expect(back.tierSpecs).toEqual(h.tierSpecs);
    // And goes on from where it was.
    back.push({ tMs: 2_000_100, values: { v: 1 } });
    expect(back.newestMs).toBe(2_000_100);
  });

  it('sends values at 6 significant digits, a one-point bucket as its value', () => {
    const h = new ChartHistory([{ bucketMs: 1_000, spanMs: 10_000 }]);
    h.push({ tMs: 1_000, values: { v: 1 / 3 } });
    h.push({ tMs: 2_000, values: { v: 1 / 3 } });
    h.push({ tMs: 2_500, values: { v: 2 / 3 } });
    expect(h.toData().tiers[0]!.buckets.map((b) => b.cols['v'])).toEqual([0.333333, [2, 1, 0.333333, 0.666667]]);
  });

  it('fits the bridge frame with room to spare: 64 ranks\' series, every tier full', () => {
    const data = syntheticHistory({ attentionRanks: 32, ffnRanks: 32, minutes: 16, endMs: 1e12 });
    // ~4.4 MB of the 8 MiB (106 series); before rounding and one-point buckets it was ~10 MB.
    expect(JSON.stringify(data).length).toBeLessThan(BRIDGE_MAX_MESSAGE_BYTES * 0.6);
  });

  it('refuses a tier whose span is shorter than its bucket', () => {
    expect(() => new ChartHistory([{ bucketMs: 1_000, spanMs: 10 }])).toThrow(/bucketMs <= spanMs/);
    expect(() => new ChartHistory([])).toThrow(/at least one tier/);
  });
});
