import { describe, expect, it } from 'vitest';
import type { LayerCosts } from './costs.js';
import { plan, searchPlans } from './search.js';

/** attention: fixed + per sequence; FFN: weight-read floor (fixed) + per token; link: latency only. */
function costs(o: { attnFixed: number; attnPerSeq: number; ffnFixed: number; ffnPerTok: number; lat: number }): LayerCosts {
  return {
    numLayers: 10,
    bytesPerToken: 1,
    attentionMs: (b) => o.attnFixed + o.attnPerSeq * b,
    ffnMs: (t) => o.ffnFixed + o.ffnPerTok * t,
    linkLatencyMs: o.lat,
    linkTransferMs: () => 0,
    linkSource: 'test',
  };
}
const q = { gpus: 4, tpotMs: 50, context: 128, maxBatch: 64, stageCounts: [1, 2] };

describe('planner search', () => {
  it('a slow link and cheap FFN: colocated replicas win and the reason says do not use AFD', () => {
    const r = plan(costs({ attnFixed: 0.1, attnPerSeq: 0.05, ffnFixed: 0.2, ffnPerTok: 0.001, lat: 2 }), q);
    expect(r.useAfd).toBe(false);
    expect(r.rows[0]).toMatchObject({ kind: 'colocated', replicas: 4, gpusUsed: 4 });
    expect(r.reason).toMatch(/^do not use AFD here: 4 colocated replicas give .* tok\/s per GPU at TPOT .* ms, .*x the best AFD topology/);
    for (const row of r.rows) expect(row.tpotMs).toBeLessThanOrEqual(50);
  });

  it('an FFN flat in tokens (weight reads) and DBO hiding it behind attention: 3A1F wins', () => {
    // colocated pays attention + FFN each layer (batch 8 at 13 ms); 3A1F with DBO pays about
    // max(attention, FFN) and amortises one FFN rank over 3 x 16 sequences: 17.3 ms
    const r = plan(costs({ attnFixed: 0, attnPerSeq: 0.1, ffnFixed: 0.5, ffnPerTok: 0.0001, lat: 0.001 }), { ...q, tpotMs: 20 });
    expect(r.rows[0]).toMatchObject({ kind: 'afd', topology: '3A1F', stages: 2, batchPerRank: 16 });
    expect(r.useAfd).toBe(true);
    expect(r.reason).toMatch(/^use AFD: 3A1F with DBO at batch 16 per attention rank gives .* tok\/s per GPU at TPOT .* ms, 1\.\d\dx the tok\/s per GPU of 4 colocated replicas/);
  });

  it('ranks by tokens/s per GPU of the cluster, every row within the target and x + y <= N', () => {
    const rows = searchPlans(costs({ attnFixed: 0.1, attnPerSeq: 0.02, ffnFixed: 0.5, ffnPerTok: 0.002, lat: 0.05 }), q);
    for (let i = 1; i < rows.length; i++) expect(rows[i - 1]!.tokensPerSPerGpu).toBeGreaterThanOrEqual(rows[i]!.tokensPerSPerGpu);
    for (const row of rows) {
      expect(row.tpotMs).toBeLessThanOrEqual(50);
      expect(row.attention + row.ffn).toBeLessThanOrEqual(4);
      expect(row.tokensPerSPerGpu).toBeCloseTo(row.tokensPerS / 4, 6);
    }
    expect(rows.map((r) => r.topology)).toEqual(expect.arrayContaining(['colocated', '1A1F', '2A1F', '3A1F', '2A2F']));
  });

  it('says so when nothing meets the target', () => {
    const r = plan(costs({ attnFixed: 10, attnPerSeq: 1, ffnFixed: 10, ffnPerTok: 1, lat: 1 }), q);
    expect(r.rows).toEqual([]);
    expect(r.reason).toMatch(/nothing meets TPOT <= 50 ms at batch 1 \(colocated batch 1 is predicted at 220\.00 ms\)/);
  });
});
