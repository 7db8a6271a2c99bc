import { describe, expect, it } from 'vitest';
import { metricsSnapshotSchema } from '@afd/shared';
import { SyntheticMetrics } from '../testing/syntheticMetrics.js';
import { DashboardModel, IDLE_AFTER_MS, rankLabel } from './dashboardModel.js';

function feed(model: DashboardModel, gen: SyntheticMetrics, ticks: number, t0 = 1_000_000, dtMs = 100): number {
  let t = t0;
  for (let i = 0; i < ticks; i++) {
    t += dtMs;
    model.ingest(gen.tick(t), t);
  }
  return t;
}

describe('DashboardModel', () => {
  it('synthetic snapshots satisfy the shared schema', () => {
    const snaps = new SyntheticMetrics({ attentionRanks: 2, ffnRanks: 2, numLayers: 4, numStages: 2 }).tick(1);
    for (const s of snaps) expect(metricsSnapshotSchema.safeParse(s).success).toBe(true);
  });

  it('labels ranks and sorts F before A', () => {
    const m = new DashboardModel();
    feed(m, new SyntheticMetrics({ attentionRanks: 2, ffnRanks: 2, numLayers: 4, numStages: 1 }), 1);
    expect(m.rankLabels()).toEqual(['F0', 'F1', 'A0', 'A1']);
    expect(rankLabel('colocated', 3)).toBe('C3');
  });

  it('sums serving gauges and derives graph rates from counters', () => {
    const m = new DashboardModel();
    feed(m, new SyntheticMetrics({ attentionRanks: 2, ffnRanks: 1, numLayers: 2, numStages: 1 }), 11);
    const p = m.series.last()!;
    expect(p.tokensPerSecond).toBeGreaterThan(200);
    expect(p.running).toBeGreaterThanOrEqual(8);
    expect(Object.keys(p.stepMs).sort()).toEqual(['A0', 'A1', 'F0']);
    // 3 ranks x ~0.9 hits per step at 10 steps/s.
    expect(p.graphHitsPerSecond).toBeGreaterThan(15);
    expect(p.graphHitRate).toBeGreaterThan(0.8);
    expect(m.graphTotals().captures).toBe(30);
  });

  it('leaves out the step time of a rank that stopped stepping (idle, not slow)', () => {
    const m = new DashboardModel();
    const t = feed(m, new SyntheticMetrics({ attentionRanks: 1, ffnRanks: 1, numLayers: 2, numStages: 1 }), 5);
    expect(Object.keys(m.series.last()!.stepMs).sort()).toEqual(['A0', 'F0']);
    // The same counters, later: no step happened.
    const idle = ['A0', 'F0'].map((l) => m.latest(l)!);
    m.ingest(idle.map((s) => ({ ...s, timestampMs: t + IDLE_AFTER_MS / 2 })), t + IDLE_AFTER_MS / 2);
    expect(Object.keys(m.series.last()!.stepMs)).toHaveLength(2);
    m.ingest(idle.map((s) => ({ ...s, timestampMs: t + IDLE_AFTER_MS + 100 })), t + IDLE_AFTER_MS + 100);
    expect(m.series.last()!.stepMs).toEqual({});
  });

  it('keeps the series bounded', () => {
    const m = new DashboardModel({ historyPoints: 50 });
    feed(m, new SyntheticMetrics({ attentionRanks: 1, ffnRanks: 1, numLayers: 2, numStages: 1 }), 200);
    expect(m.series.size).toBe(50);
  });

  it('builds layer x (rank, stage) grids, cumulative and windowed', () => {
    const m = new DashboardModel({ windowMs: 1000 });
    feed(m, new SyntheticMetrics({ attentionRanks: 2, ffnRanks: 2, numLayers: 3, numStages: 2 }), 40);
    const total = m.transferGrids('total');
    expect(total.numLayers).toBe(3);
    expect(total.columns).toEqual(['F0 s0', 'F0 s1', 'F1 s0', 'F1 s1', 'A0 s0', 'A0 s1', 'A1 s0', 'A1 s1']);
    expect(total.a2fBytes.length).toBe(24);
    expect([...total.a2fBytes].every((v) => v > 0)).toBe(true);
    const win = m.transferGrids('window');
    // A 1 s window at 10 Hz covers ~10 of the 40 steps.
    const ratio = (win.a2fBytes[0] ?? 0) / (total.a2fBytes[0] ?? 1);
    expect(ratio).toBeGreaterThan(0.2);
    expect(ratio).toBeLessThan(0.35);
    expect([...win.a2fWireUs].every((v) => v >= 20)).toBe(true);
  });

  it('names the dense FFN layers of a model that mixes dense and MoE layers (DeepSeek), none otherwise', () => {
    const m = new DashboardModel();
    const gen = new SyntheticMetrics({ attentionRanks: 1, ffnRanks: 1, numLayers: 4, numStages: 1 });
    const t = 1_000_100;
    const snaps = gen.tick(t).map((s) => ({ ...s, stats: { ...s.stats, moeLayers: [false, true, true, true] } }));
    for (const s of snaps) expect(metricsSnapshotSchema.safeParse(s).success).toBe(true);
    m.ingest(snaps, t);
    expect(m.transferGrids('total').denseLayers).toEqual([0]);
    const plain = new DashboardModel();
    feed(plain, new SyntheticMetrics({ attentionRanks: 1, ffnRanks: 1, numLayers: 4, numStages: 1 }), 1);
    expect(plain.transferGrids('total').denseLayers).toEqual([]);
    const bad = { ...snaps[0]!, stats: { ...snaps[0]!.stats, moeLayers: [true] } };
    expect(metricsSnapshotSchema.safeParse(bad).success).toBe(false);
  });

  it('lists the FFN loop of FFN ranks only', () => {
    const m = new DashboardModel();
    feed(m, new SyntheticMetrics({ attentionRanks: 4, ffnRanks: 2, numLayers: 2, numStages: 1 }), 3);
    const rows = m.ffnRows();
    expect(rows.map((r) => r.label)).toEqual(['F0', 'F1']);
    expect(rows[0]!.loop.stepsServed).toBe(3);
  });

  it('reset forgets everything', () => {
    const m = new DashboardModel();
    feed(m, new SyntheticMetrics({ attentionRanks: 1, ffnRanks: 1, numLayers: 2, numStages: 1 }), 3);
    m.reset();
    expect(m.series.size).toBe(0);
    expect(m.rankLabels()).toEqual([]);
    expect(m.transferGrids('total').columns).toEqual([]);
  });
});
