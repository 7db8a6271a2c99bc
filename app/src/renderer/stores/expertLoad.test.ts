import { describe, expect, it } from 'vitest';
import { emptyRankStats, metricsSnapshotSchema, type ExpertStats, type MetricsSnapshot } from '@afd/shared';
import { DashboardModel } from '../../common/dashboardModel.js';
import { expertHolders, expertLoadGrid } from './expertLoad.js';

const L = 3;
const E = 4;

/** An FFN rank of a 2-FFN expert-parallel group whose router sent `perStep` pairs to each expert per step. */
function ffn(rank: number, tMs: number, step: number, experts: Partial<ExpertStats> = {}): MetricsSnapshot {
  const zeros = (): number[] => new Array<number>(L).fill(0);
  const stats = emptyRankStats('ffn', rank, L, 1);
  return {
    timestampMs: tMs,
    serving: null,
    stats: {
      ...stats,
      weightBytes: 1000 + rank,
      experts: {
        numExperts: E,
        expertStart: rank * 2,
        expertEnd: rank * 2 + 2,
        expertParallel: true,
        numFfnRanks: 2,
        // Layer 1 is dense (never routed); expert e gets (e + 1) * step pairs from rank 0, step from rank 1.
        tokensPerExpert: Array.from({ length: L }, (_, l) => Array.from({ length: E }, (_, e) => (l === 1 ? 0 : (rank === 0 ? e + 1 : 1) * step))),
        dispatchBytes: { sent: zeros(), received: zeros() },
        combineBytes: { sent: zeros(), received: zeros() },
        exchangeUs: 0,
        ...experts,
      },
    },
  };
}

describe('expert load', () => {
  it('the test snapshots satisfy the shared schema', () => {
    expect(metricsSnapshotSchema.safeParse(ffn(0, 1, 1)).success).toBe(true);
  });

  it('sums the FFN ranks\' routing into a layers x experts grid, cumulative and windowed', () => {
    const m = new DashboardModel({ windowMs: 1000 });
    for (let step = 1; step <= 30; step++) m.ingest([ffn(0, step * 100, step), ffn(1, step * 100, step)], step * 100);
    const total = expertLoadGrid(m, 'total').grid!;
    expect(total.numLayers).toBe(L);
    expect(total.columns).toEqual(['e0', 'e1', 'e2', 'e3']);
    expect(Array.from(total.values.subarray(0, E))).toEqual([60, 90, 120, 150]);
    expect(Array.from(total.values.subarray(E, 2 * E))).toEqual([0, 0, 0, 0]);
    expect(total.perLayer).toEqual([420, 0, 420]);
    // The trailing second holds 11 steps: the baseline is the last snapshot before the window.
    const window = expertLoadGrid(m, 'window').grid!;
    expect(Array.from(window.values.subarray(0, E))).toEqual([22, 33, 44, 55]);
    expect(total.holders.map((h) => `${h.label}:${h.start}-${h.end}`)).toEqual(['F0:0-2', 'F1:2-4']);
  });

  it('says why there is no grid', () => {
    const m = new DashboardModel();
    expect(expertLoadGrid(m, 'total').gap).toBe('no-ffn-ranks');
    const dense = ffn(0, 1, 1);
    delete dense.stats.experts;
    m.ingest([dense], 1);
    expect(expertLoadGrid(m, 'total').gap).toBe('dense');
    m.ingest([ffn(0, 2, 1, { expertParallel: false, tokensPerExpert: [], expertStart: 0, expertEnd: E, numFfnRanks: 1 })], 2);
    expect(expertLoadGrid(m, 'total').gap).toBe('not-counted');
    expect(expertHolders(m)).toEqual([{ label: 'F0', start: 0, end: E, numExperts: E, expertParallel: false, weightBytes: 1000 }]);
  });
});
