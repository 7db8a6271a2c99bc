import { describe, expect, it } from 'vitest';
import { bridgeInvokeChannels } from '@afd/shared';
import { SyntheticMetrics } from '../renderer/testing/syntheticMetrics.js';
import { ChartHistory } from '../common/ChartHistory.js';
import { MetricsHistory } from './MetricsHistory.js';

describe('MetricsHistory', () => {
  it('folds the snapshots of every foldMs of console time into one chart point', () => {
    let now = 0;
    const h = new MetricsHistory({ now: () => now });
    const gen = new SyntheticMetrics({ attentionRanks: 2, ffnRanks: 1, numLayers: 2, numStages: 1 });
    // 20 ticks of 3 ranks, 100 ms apart: one fold per tick.
    for (let i = 0; i < 20; i++) {
      now = 1_000 + i * 100;
      for (const s of gen.tick(now)) h.add('L1', s);
    }
    const data = h.data();
    expect(data.launchId).toBe('L1');
    // What goes over the bridge is valid for the channel.
    expect(bridgeInvokeChannels['metrics.history'].response.parse(JSON.parse(JSON.stringify(data)))).toEqual(data);
    const w = ChartHistory.fromData(data.history).window(60_000);
    expect(w.tMs.length).toBe(20);
    expect(w.tMs[19]).toBe(2_900);
    // The ranks' series are there, under the renderer's keys.
    expect([...w.mean.keys()]).toEqual(expect.arrayContaining(['tokensPerSecond', 'step_A0', 'step_A1', 'step_F0', 'prefix_A1']));
  });

  it('starts over with a new launch', () => {
    const h = new MetricsHistory({ now: () => 0 });
    const gen = new SyntheticMetrics({ attentionRanks: 1, ffnRanks: 0, numLayers: 1, numStages: 1 });
    for (const s of gen.tick(1_000)) h.add('L1', s);
    for (const s of gen.tick(1_100)) h.add('L2', s);
    const data = h.data();
    expect(data.launchId).toBe('L2');
    expect(ChartHistory.fromData(data.history).window(900_000).tMs).toEqual(new Float64Array([1_100]));
  });

  it('is empty, with no launch, before any snapshot', () => {
    const data = new MetricsHistory().data();
    expect(data.launchId).toBeNull();
    expect(data.history.tiers.every((t) => t.buckets.length === 0)).toBe(true);
  });
});
