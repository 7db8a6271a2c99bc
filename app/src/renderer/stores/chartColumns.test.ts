import { describe, expect, it } from 'vitest';
import { SyntheticMetrics } from '../testing/syntheticMetrics.js';
import { chartColumns, stepKey } from './chartColumns.js';
import { DashboardModel } from './dashboardModel.js';

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
});
