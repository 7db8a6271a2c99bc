import { describe, expect, it } from 'vitest';
import { metricsSnapshotSchema, type MetricsSnapshot } from '@afd/shared';
import { SyntheticMetrics, syntheticPrefixHitsPerStep } from '../renderer/testing/syntheticMetrics.js';
import { DashboardModel, IDLE_AFTER_MS, rankLabel } from './dashboardModel.js';

function feed(model: DashboardModel, gen: SyntheticMetrics, ticks: number, t0 = 1_000_000, dtMs = 100): number {
  let t = t0;
  for (let i = 0; i < ticks; i++) {
    t += dtMs;
    model.ingest(gen.tick(t), t);
  }
  return t;
}

/** One attention rank (A0) whose prefix-cache counters are `kv(i)` at tick i (100 ms apart), plus an FFN rank. */
function feedPrefix(model: DashboardModel, ticks: number, kv: (i: number) => { queried: number; hit: number }, t0 = 1_000_000): number {
  const gen = new SyntheticMetrics({ attentionRanks: 1, ffnRanks: 1, numLayers: 1, numStages: 1 });
  let t = t0;
  for (let i = 0; i < ticks; i++) {
    t += 100;
    const { queried, hit } = kv(i);
    const snaps: MetricsSnapshot[] = gen.tick(t).map((s) => (s.stats.kv ? { ...s, stats: { ...s.stats, kv: { ...s.stats.kv, prefixQueryTokens: queried, prefixHitTokens: hit } } } : s));
    model.ingest(snaps, t);
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

  it('labels each wire map by how its ranks measured it: round trip / 2 shows once, on A→F', () => {
    const m = new DashboardModel();
    feed(m, new SyntheticMetrics({ attentionRanks: 1, ffnRanks: 1, numLayers: 2, numStages: 1, wireBasis: { a2f: 'round-trip/2', f2a: 'round-trip/2' } }), 3);
    const g = m.transferGrids('total');
    expect(g.columns).toEqual(['F0 s0', 'A0 s0']);
    expect([...g.a2fWireUs].every((v) => v >= 20)).toBe(true);
    expect([...g.f2aWireUs].every((v) => Number.isNaN(v))).toBe(true);
    expect(g.wireNotes.a2f).toEqual([undefined, undefined]);
    expect(g.wireNotes.f2a).toEqual([expect.stringMatching(/^not timeable alone/), expect.stringMatching(/^not timeable alone/)]);
    expect(g.wireLegend.a2f).toMatch(/^round trip \/ 2/);
    expect(g.wireLegend.f2a).toMatch(/^not timeable alone/);
    const oneWay = new DashboardModel();
    feed(oneWay, new SyntheticMetrics({ attentionRanks: 1, ffnRanks: 1, numLayers: 2, numStages: 1 }), 3);
    const o = oneWay.transferGrids('total');
    expect([...o.f2aWireUs].every((v) => v >= 20)).toBe(true);
    expect(o.wireLegend.f2a).toMatch(/^one-way/);
    expect(o.wireNotes.f2a).toEqual([undefined, undefined]);
  });

  it('shows only stage s0 of ranks that run with DBO off, and names them', () => {
    const m = new DashboardModel();
    feed(m, new SyntheticMetrics({ attentionRanks: 2, ffnRanks: 1, numLayers: 3, numStages: 2, dbo: false }), 3);
    const g = m.transferGrids('total');
    expect(g.columns).toEqual(['F0 s0', 'A0 s0', 'A1 s0']);
    expect(g.dboOffRanks).toEqual(['F0', 'A0', 'A1']);
    expect(g.a2fBytes.length).toBe(9);
    expect([...g.a2fWireUs].every((v) => v >= 20)).toBe(true);
    const on = new DashboardModel();
    feed(on, new SyntheticMetrics({ attentionRanks: 1, ffnRanks: 1, numLayers: 3, numStages: 2, dbo: true }), 3);
    expect(on.transferGrids('total').columns).toEqual(['F0 s0', 'F0 s1', 'A0 s0', 'A0 s1']);
    expect(on.transferGrids('total').dboOffRanks).toEqual([]);
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

  it('prefix cache: per-rank and overall hit rates, windowed and since start, and the cached blocks', () => {
    const m = new DashboardModel({ windowMs: 1000 });
    feed(m, new SyntheticMetrics({ attentionRanks: 2, ffnRanks: 2, numLayers: 1, numStages: 1 }), 30);
    const { ranks, all } = m.prefixCache();
    // FFN ranks hold no KV cache: not listed.
    expect(ranks.map((r) => r.label)).toEqual(['A0', 'A1']);
    expect(ranks.map((r) => r.windowRate)).toEqual([0.25, 0.45]);
    expect(ranks.map((r) => r.lifetimeRate)).toEqual([0.25, 0.45]);
    expect(ranks[1]!.lifetime).toEqual({ queried: 30 * 400, hit: 30 * syntheticPrefixHitsPerStep(1) });
    // A 1 s window at 10 Hz: the 11 snapshots of the last second, counted from the one before them (as the byte grids).
    expect(ranks[0]!.window).toEqual({ queried: 11 * 400, hit: 11 * 100 });
    expect(all).toMatchObject({ label: 'all', windowRate: 0.35, lifetimeRate: 0.35, blocksCached: 2 * 60, blocksTotal: 1024 });
    const p = m.series.last()!;
    expect(p.prefixHitRate).toBeCloseTo(0.35, 12);
    expect(p.prefixHitRateByRank).toEqual({ A0: 0.25, A1: 0.45 });
    expect(p.kvCached).toBeCloseTo(120 / 1024, 12);
  });

  it('prefix cache: the window follows recent lookups, the lifetime ratio all of them', () => {
    const m = new DashboardModel({ windowMs: 2000 });
    // 5 s of lookups that all hit, then 5 s of lookups that all miss.
    feedPrefix(m, 100, (i) => ({ queried: (i + 1) * 100, hit: Math.min(i + 1, 50) * 100 }));
    const a0 = m.prefixCache().ranks[0]!;
    expect(a0.windowRate).toBe(0);
    expect(a0.lifetimeRate).toBe(0.5);
    // 2 s at 10 Hz: 21 snapshots, counted from the one before them.
    expect(a0.window.queried).toBe(2100);
  });

  it('prefix cache: no lookups in the window is no rate (NaN point, null row), not 0%', () => {
    const m = new DashboardModel({ windowMs: 1000 });
    // Lookups during the first second, then an idle rank whose counters stand still.
    feedPrefix(m, 40, (i) => ({ queried: Math.min(i + 1, 10) * 64, hit: Math.min(i + 1, 10) * 32 }));
    const p = m.series.last()!;
    expect(Number.isNaN(p.prefixHitRate)).toBe(true);
    expect(p.prefixHitRateByRank).toEqual({});
    const { ranks, all } = m.prefixCache();
    expect(ranks[0]!.windowRate).toBeNull();
    expect(all!.windowRate).toBeNull();
    expect(ranks[0]!.lifetimeRate).toBe(0.5);
    // A rank that never looked anything up has no lifetime ratio either.
    const fresh = new DashboardModel();
    feedPrefix(fresh, 5, () => ({ queried: 0, hit: 0 }));
    expect(fresh.prefixCache().ranks[0]!.lifetimeRate).toBeNull();
  });

  it('prefix cache: a rank restart (counters back to zero) gives no negative rate', () => {
    const m = new DashboardModel({ windowMs: 1000 });
    // 2 s at 80% hits, then the rank restarts and looks up at 10% hits.
    const t = feedPrefix(m, 20, (i) => ({ queried: (i + 1) * 1000, hit: (i + 1) * 800 }));
    feedPrefix(m, 5, (i) => ({ queried: (i + 1) * 100, hit: (i + 1) * 10 }), t);
    const a0 = m.prefixCache().ranks[0]!;
    // In the window (11 intervals): the last 6 before the restart (6000 queried, 4800 hit) and the restarted counters (500, 50).
    expect(a0.window).toEqual({ queried: 6500, hit: 4850 });
    expect(a0.windowRate).toBeCloseTo(4850 / 6500, 12);
    expect(a0.lifetimeRate).toBeCloseTo(0.1, 12);
    for (let i = 0; i < m.series.size; i++) {
      const r = m.series.at(i)!.prefixHitRate;
      expect(Number.isNaN(r) || (r >= 0 && r <= 1)).toBe(true);
    }
  });

  it('prefix cache: none without KV-holding ranks', () => {
    const m = new DashboardModel();
    feed(m, new SyntheticMetrics({ attentionRanks: 0, ffnRanks: 2, numLayers: 1, numStages: 1 }), 3);
    expect(m.prefixCache()).toEqual({ ranks: [], all: null });
    expect(Number.isNaN(m.series.last()!.kvCached)).toBe(true);
    expect(Number.isNaN(m.series.last()!.prefixHitRate)).toBe(true);
  });
});
