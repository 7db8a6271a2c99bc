import { describe, expect, it } from 'vitest';
import type { LayerCosts } from './costs.js';
import type { MemoryModel } from './memory.js';
import { describeRow, plan, searchPlans } from './search.js';

/** attention: fixed + per sequence; FFN: weight-read floor (fixed) + per token; link: latency only. */
function costs(o: { attnFixed: number; attnPerSeq: number; ffnFixed: number; ffnPerTok: number; lat: number }, extra: Partial<LayerCosts> = {}): LayerCosts {
  return {
    numLayers: 10,
    bytesPerToken: 1,
    attentionMs: (b) => o.attnFixed + o.attnPerSeq * b,
    ffnMs: (t) => o.ffnFixed + o.ffnPerTok * t,
    linkLatencyMs: o.lat,
    linkTransferMs: () => 0,
    linkSource: 'test',
    ...extra,
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

const GIB = 1024 ** 3;
/** A 61 GB MoE model (5 GB attention side, 56 GB experts) on 40 GiB cards. */
const memory = (deviceGib: number, kvBytesPerToken = 0): MemoryModel => ({ deviceBytes: deviceGib * GIB, weightBytes: 61e9, attentionWeightBytes: 5e9, ffnWeightBytes: 56e9, kvBytesPerToken, notes: [] });
const moe = { numExperts: 8, topK: 2 };
const cheap = { attnFixed: 0.1, attnPerSeq: 0.05, ffnFixed: 0.2, ffnPerTok: 0.001, lat: 0.01 };

describe('planner search: memory, EP and the gate side', () => {
  it('a model bigger than one GPU: colocated and unsplit FFN ranks are dropped with the reason, EP shapes remain', () => {
    const r = plan(costs(cheap, { moe }), { ...q, memory: memory(40) });
    expect(r.dropped).toEqual(expect.arrayContaining([
      { kind: 'colocated', topology: '4 colocated replicas', reason: 'colocated: 57 GiB of weights do not fit 40 GiB' },
      { kind: 'afd', topology: '1A1F x2', reason: 'FFN rank: 52 GiB of weights do not fit 40 GiB' },
      { kind: 'afd', topology: '2A2F', reason: 'FFN rank: 52 GiB of weights do not fit 40 GiB' },
    ]));
    expect(r.rows.length).toBeGreaterThan(0);
    for (const row of r.rows) {
      expect(row.memoryBytesPerGpu).toBeLessThanOrEqual(40 * GIB);
      expect(row.kind === 'ep' || (row.kind === 'afd' && row.epSize === row.ffn && row.ffn >= 2)).toBe(true);
    }
    expect(r.rows.map(describeRow)).toEqual(expect.arrayContaining(['2A2F (FFN EP2)', 'EP2 x2', 'EP4', '2A2F (FFN EP2), gate on attention']));
  });

  it('without the memory model the same query keeps every shape', () => {
    const r = plan(costs(cheap, { moe }), q);
    expect(r.dropped).toEqual([]);
    expect(r.rows.map((row) => row.kind)).toEqual(expect.arrayContaining(['colocated', 'afd', 'ep']));
    expect(r.rows[0]!.memoryBytesPerGpu).toBeUndefined();
  });

  it('the KV cache bounds the batch: the largest fitting batch, and the row says memory bounded it', () => {
    // attention rank: 5 GB + batch x 1000 tokens x 0.5 MB: 16 sequences fit 16 GiB, 32 do not
    const r = searchPlans(costs({ attnFixed: 0, attnPerSeq: 0.01, ffnFixed: 0.5, ffnPerTok: 0.0001, lat: 0.001 }), { ...q, tpotMs: 1000, context: 1000, memory: { ...memory(16, 0.5e6), ffnWeightBytes: 10e9, weightBytes: 15e9 } });
    const afd = r.find((row) => row.topology === '3A1F' && row.stages === 1)!;
    expect(afd.batchPerRank).toBe(16);
    expect(afd.memoryBytesPerGpu).toBe(5e9 + 16 * 1000 * 0.5e6); // the attention rank, fuller than the 10 GB FFN rank
    expect(afd.notes).toEqual(['batch bounded by memory (32 per rank: attention rank: 4.7 GiB of weights + 15 GiB of KV do not fit 16 GiB)']);
  });

  it('EP groups only where they split the experts evenly', () => {
    const rows = searchPlans(costs(cheap, { moe: { numExperts: 6, topK: 2 } }), { ...q, gpus: 6, tpotMs: 1000 });
    expect([...new Set(rows.filter((row) => row.epSize > 1).map((row) => row.epSize))].sort()).toEqual([2, 3, 6]); // 3A3F's FFN EP3, EP2 and EP6; not EP4
    expect(rows.some((row) => row.topology === 'EP4')).toBe(false);
  });

  it('a dense model gets neither EP nor gate variants', () => {
    const rows = searchPlans(costs(cheap), q);
    expect(rows.every((row) => row.kind !== 'ep' && row.epSize === 1 && row.gate === undefined)).toBe(true);
  });
});
