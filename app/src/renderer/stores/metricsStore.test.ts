import { describe, expect, it } from 'vitest';
import { SyntheticMetrics } from '../testing/syntheticMetrics.js';
import { createFakeBridge } from '../testing/fakeBridge.js';
import { createMetricsStore } from './metricsStore.js';
import { ChartHistory } from '../../common/ChartHistory.js';
import { memoryStorage } from '../lib/persist.js';

describe('metricsStore', () => {
  it('folds pushed snapshots once per tick and resets on a new launch', () => {
    const bridge = createFakeBridge();
    const store = createMetricsStore(bridge, { autoTick: false, storage: null });
    const gen = new SyntheticMetrics({ attentionRanks: 2, ffnRanks: 2, numLayers: 2, numStages: 1 });
    for (const s of gen.tick(1000)) bridge.emit('metrics.snapshot', { agentId: 'a', launchId: 'L1', snapshot: s });
    expect(store.getState().model.series.size).toBe(0);
    store.getState().flush();
    expect(store.getState().model.series.size).toBe(1);
    expect(store.getState().model.rankLabels()).toHaveLength(4);
    const v = store.getState().version;
    store.getState().flush(); // nothing queued: no new point, no re-render
    expect(store.getState().version).toBe(v);
    for (const s of gen.tick(1100)) bridge.emit('metrics.snapshot', { agentId: 'a', launchId: 'L2', snapshot: s });
    expect(store.getState().launchId).toBe('L2');
    store.getState().flush();
    expect(store.getState().model.series.size).toBe(1);
  });

  it('drops folds while paused', () => {
    const store = createMetricsStore(null, { autoTick: false, storage: null });
    const gen = new SyntheticMetrics({ attentionRanks: 1, ffnRanks: 1, numLayers: 2, numStages: 1 });
    store.getState().setPaused(true);
    store.getState().ingest(gen.tick(1), 'L');
    store.getState().flush();
    expect(store.getState().model.series.size).toBe(0);
  });

  it('starts the chart history from the console\'s, with the points folded before it came on top', async () => {
    const bridge = createFakeBridge();
    const console_ = new ChartHistory();
    for (let i = 0; i < 50; i++) console_.push({ tMs: 1_000 + i * 100, values: { tokensPerSecond: i } });
    let answer: (v: unknown) => void = () => undefined;
    bridge.handle('metrics.history', () => new Promise((resolve) => (answer = resolve)));
    const store = createMetricsStore(bridge, { autoTick: false, storage: null });
    expect(bridge.calls.map((c) => c.channel)).toEqual(['metrics.history']);
    // A fold before the history comes: its point is kept and goes on top.
    const gen = new SyntheticMetrics({ attentionRanks: 1, ffnRanks: 1, numLayers: 2, numStages: 1 });
    for (const s of gen.tick(7_000)) bridge.emit('metrics.snapshot', { agentId: 'a', launchId: 'L1', snapshot: s });
    store.getState().flush();
    const v = store.getState().version;
    answer({ launchId: 'L1', history: console_.toData() });
    await new Promise((r) => setTimeout(r, 0));
    const w = store.getState().history.window(60_000);
    expect(w.tMs.length).toBe(51);
    expect(w.mean.get('tokensPerSecond')![49]).toBe(49);
    expect(w.tMs[50]).toBe(7_000);
    expect(store.getState().version).toBeGreaterThan(v);
  });

  it('ignores a console history of another launch, and one that comes after a reset', () => {
    const store = createMetricsStore(null, { autoTick: false, storage: null });
    const gen = new SyntheticMetrics({ attentionRanks: 1, ffnRanks: 0, numLayers: 1, numStages: 1 });
    store.getState().ingest(gen.tick(5_000), 'L2');
    store.getState().flush();
    const other = new ChartHistory();
    other.push({ tMs: 1_000, values: { tokensPerSecond: 1 } });
    store.getState().seedHistory(other.toData(), 'L1');
    expect(store.getState().history.window(900_000).tMs).toEqual(new Float64Array([5_000]));
    // Only the first answer seeds.
    store.getState().seedHistory(other.toData(), 'L2');
    expect(store.getState().history.window(900_000).tMs).toEqual(new Float64Array([5_000]));
  });

  it('remembers the chart range in storage, and falls back to the last minute for a stored value not on offer', () => {
    const storage = memoryStorage();
    const a = createMetricsStore(null, { autoTick: false, storage });
    expect(a.getState().chartRangeMs).toBe(60_000);
    a.getState().setChartRange(900_000);
    expect(createMetricsStore(null, { autoTick: false, storage }).getState().chartRangeMs).toBe(900_000);
    storage.setItem('afd.console.chartRangeMs', '123');
    expect(createMetricsStore(null, { autoTick: false, storage }).getState().chartRangeMs).toBe(60_000);
  });
});
