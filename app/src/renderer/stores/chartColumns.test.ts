import { describe, expect, it } from 'vitest';
import { SyntheticMetrics } from '../testing/syntheticMetrics.js';
import { chartColumns } from './chartColumns.js';
import { DashboardModel } from '../../common/dashboardModel.js';
import { ChartHistory } from '../../common/ChartHistory.js';
import { pointRow, prefixKey, stepKey } from '../../common/chartRow.js';

/** A model fed `points` folds of synthetic ranks 100 ms apart, and the history of its points. */
function feed(opts: { attentionRanks: number; ffnRanks: number }, points: number): { model: DashboardModel; history: ChartHistory } {
  const model = new DashboardModel();
  const history = new ChartHistory();
  const gen = new SyntheticMetrics({ ...opts, numLayers: 2, numStages: 1 });
  for (let i = 0; i < points; i++) {
    model.ingest(gen.tick(1000 + i * 100), 1000 + i * 100);
    history.push(pointRow(model.series.last()!));
  }
  return { model, history };
}

describe('chartColumns', () => {
  it('lays a window out as one column per series, times relative to the newest point', () => {
    const { model, history } = feed({ attentionRanks: 1, ffnRanks: 2 }, 6);
    const { data, stepLabels } = chartColumns(history.window(60_000));
    expect([...data.t]).toEqual([-0.5, -0.4, -0.3, -0.2, -0.1, 0].map((v) => expect.closeTo(v, 9)));
    expect(data.tMs[5]).toBe(1500);
    expect(data.rangeMs).toBe(60_000);
    expect(data.bucketMs).toBe(100);
    expect(stepLabels).toEqual(['F0', 'F1', 'A0']);
    const last = model.series.last()!;
    expect(data.values.get('tokensPerSecond')![5]).toBe(last.tokensPerSecond);
    expect(data.values.get('kvUsage')![5]).toBeCloseTo(last.kvUsage * 100, 9);
    expect(data.values.get(stepKey('F1'))![5]).toBe(last.stepMs['F1']);
    for (const col of data.values.values()) expect(col).toHaveLength(6);
  });

  it('keeps unknown values as NaN (gaps) and has no column for a series never known', () => {
    const { data } = chartColumns(feed({ attentionRanks: 0, ffnRanks: 1 }, 1).history.window(60_000));
    // FFN-only: no serving stats, so no tokens/s column at all.
    expect(data.values.has('tokensPerSecond')).toBe(false);
    expect(chartColumns(new ChartHistory().window(60_000)).data.t).toHaveLength(0);
  });

  it('has the windowed prefix-cache hit rate (%) overall and per KV rank, and the cached share of KV blocks', () => {
    const { model, history } = feed({ attentionRanks: 2, ffnRanks: 1 }, 5);
    const { data, prefixLabels } = chartColumns(history.window(60_000));
    expect(prefixLabels).toEqual(['A0', 'A1']);
    // The first point has one snapshot per rank: no interval, no rate yet (a gap).
    expect(Number.isNaN(data.values.get('prefixHitRate')![0]!)).toBe(true);
    expect(data.values.get('prefixHitRate')![4]).toBeCloseTo(35, 9);
    expect(data.values.get(prefixKey('A1'))![4]).toBeCloseTo(45, 9);
    expect(data.values.has(prefixKey('F0'))).toBe(false);
    expect(data.values.get('kvCached')![4]).toBeCloseTo(model.series.last()!.kvCached * 100, 9);
  });
});
