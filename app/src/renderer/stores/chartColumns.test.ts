import { describe, expect, it } from 'vitest';
import { SyntheticMetrics } from '../testing/syntheticMetrics.js';
import { chartColumns, prefixKey, stepKey } from './chartColumns.js';
import { DashboardModel } from '../../common/dashboardModel.js';

describe('chartColumns', () => {
  it('lays the ring buffer out as one column per series, times relative to the newest point', () => {
    const model = new DashboardModel({ historyPoints: 4 });
    const gen = new SyntheticMetrics({ attentionRanks: 1, ffnRanks: 2, numLayers: 2, numStages: 1 });
    for (let i = 0; i < 6; i++) model.ingest(gen.tick(1000 + i * 100), 1000 + i * 100);
    const { data, stepLabels } = chartColumns(model);
    expect([...data.t]).toEqual([-0.3, -0.2, -0.1, 0].map((v) => expect.closeTo(v, 9)));
    expect(stepLabels).toEqual(['F0', 'F1', 'A0']);
    const last = model.series.last()!;
    expect(data.values.get('tokensPerSecond')![3]).toBe(last.tokensPerSecond);
    expect(data.values.get('kvUsage')![3]).toBeCloseTo(last.kvUsage * 100, 9);
    expect(data.values.get(stepKey('F1'))![3]).toBe(last.stepMs['F1']);
    for (const col of data.values.values()) expect(col).toHaveLength(4);
  });

  it('keeps unknown values as NaN (gaps) and drops ranks without step times', () => {
    const model = new DashboardModel();
    const gen = new SyntheticMetrics({ attentionRanks: 0, ffnRanks: 1, numLayers: 1, numStages: 1 });
    model.ingest(gen.tick(1000), 1000);
    const { data } = chartColumns(model);
    // FFN-only: no serving stats.
    expect(Number.isNaN(data.values.get('tokensPerSecond')![0]!)).toBe(true);
    expect(chartColumns(new DashboardModel()).data.t).toHaveLength(0);
  });

  it('has the windowed prefix-cache hit rate (%) overall and per KV rank, and the cached share of KV blocks', () => {
    const model = new DashboardModel();
    const gen = new SyntheticMetrics({ attentionRanks: 2, ffnRanks: 1, numLayers: 1, numStages: 1 });
    for (let i = 0; i < 5; i++) model.ingest(gen.tick(1000 + i * 100), 1000 + i * 100);
    const { data, prefixLabels } = chartColumns(model);
    expect(prefixLabels).toEqual(['A0', 'A1']);
    // The first point has one snapshot per rank: no interval, no rate yet (a gap).
    expect(Number.isNaN(data.values.get('prefixHitRate')![0]!)).toBe(true);
    expect(data.values.get('prefixHitRate')![4]).toBeCloseTo(35, 9);
    expect(data.values.get(prefixKey('A1'))![4]).toBeCloseTo(45, 9);
    expect(data.values.has(prefixKey('F0'))).toBe(false);
    expect(data.values.get('kvCached')![4]).toBeCloseTo(model.series.last()!.kvCached * 100, 9);
  });
});
