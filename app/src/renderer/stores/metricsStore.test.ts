import { describe, expect, it } from 'vitest';
import { SyntheticMetrics } from '../testing/syntheticMetrics.js';
import { createFakeBridge } from '../testing/fakeBridge.js';
import { createMetricsStore } from './metricsStore.js';

describe('metricsStore', () => {
  it('folds pushed snapshots once per tick and resets on a new launch', () => {
    const bridge = createFakeBridge();
    const store = createMetricsStore(bridge, { autoTick: false });
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
    const store = createMetricsStore(null, { autoTick: false });
    const gen = new SyntheticMetrics({ attentionRanks: 1, ffnRanks: 1, numLayers: 2, numStages: 1 });
    store.getState().setPaused(true);
    store.getState().ingest(gen.tick(1), 'L');
    store.getState().flush();
    expect(store.getState().model.series.size).toBe(0);
  });
});
