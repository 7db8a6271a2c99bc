import { describe, expect, it } from 'vitest';
import { emptyRankStats, metricsSnapshotSchema, rankStatsSchema, servingStatsSchema, type MetricsSnapshot, type RankStats } from './metrics.js';

function ffnStats(): RankStats {
  const s = emptyRankStats('ffn', 1, 2, 2);
  s.steps = 10;
  s.stepTimeMs = { last: 3.5, avg: 4.25 };
  s.a2fBytes = [[4096, 2048], [4096, 2048]];
  s.f2aBytes = [[4096, 2048], [4096, 2048]];
  s.a2fWireUs = [[12.5, 8], [11, 9]];
  s.f2aWireUs = [[10, 7], [10, 7]];
  s.ffnComputeUs = 9000;
  s.graph = { hits: 7, misses: 2, captures: 1 };
  s.ffnLoop = { state: 'computing', layer: 1, stage: 0, stepsServed: 10, waitingMs: 0.2 };
  return s;
}

describe('RankStats', () => {
  it('round-trips FFN and attention stats through JSON', () => {
    const ffn = ffnStats();
    expect(rankStatsSchema.parse(JSON.parse(JSON.stringify(ffn)))).toEqual(ffn);
    const attn = emptyRankStats('attention', 0, 3, 1);
    attn.kv = { blocksUsed: 5, blocksTotal: 100, blocksCached: 3, prefixQueryTokens: 900, prefixHitTokens: 512 };
    attn.attnWaitForFfnUs = 1500;
    expect(rankStatsSchema.parse(JSON.parse(JSON.stringify(attn)))).toEqual(attn);
    expect(attn.ffnLoop).toBeNull();
    expect(ffn.kv).toBeNull();
  });

  it('rejects per layer x stage arrays of the wrong shape', () => {
    const s = ffnStats();
    s.a2fBytes = [[1, 2]];
    const r = rankStatsSchema.safeParse(s);
    expect(r.success).toBe(false);
    expect(r.error?.issues[0]?.path).toEqual(['a2fBytes']);
    expect(r.error?.issues[0]?.message).toContain('[numLayers=2][numStages=2]');
  });

  it('rejects bad values', () => {
    for (const patch of [
      { steps: -1 },
      { steps: 1.5 },
      { role: 'router' },
      { numStages: 0 },
      { graph: { hits: 1, misses: 0 } },
      { ffnLoop: { state: 'sleeping', layer: null, stage: null, stepsServed: 0, waitingMs: 0 } },
      { stepTimeMs: { last: -1, avg: 0 } },
    ]) {
      expect(rankStatsSchema.safeParse({ ...ffnStats(), ...patch }).success, JSON.stringify(patch)).toBe(false);
    }
  });
});

describe('MetricsSnapshot', () => {
  it('round-trips a snapshot with serving numbers', () => {
    const snap: MetricsSnapshot = {
      timestampMs: 1_764_460_000_000,
      stats: emptyRankStats('attention', 0, 2, 1),
      serving: {
        runningRequests: 3,
        waitingRequests: 1,
        promptTokensTotal: 300,
        generationTokensTotal: 1200,
        requestsFinishedTotal: 9,
        outputTokensPerSecond: 812.5,
        kvUsage: 0.25,
      },
    };
    expect(metricsSnapshotSchema.parse(JSON.parse(JSON.stringify(snap)))).toEqual(snap);
    expect(metricsSnapshotSchema.parse({ ...snap, serving: null }).serving).toBeNull();
  });

  it('rejects kvUsage outside 0..1 and missing stats', () => {
    expect(servingStatsSchema.safeParse({ runningRequests: 0, waitingRequests: 0, promptTokensTotal: 0, generationTokensTotal: 0, requestsFinishedTotal: 0, outputTokensPerSecond: 0, kvUsage: 1.2 }).success).toBe(false);
    expect(metricsSnapshotSchema.safeParse({ timestampMs: 1, serving: null }).success).toBe(false);
  });
});
