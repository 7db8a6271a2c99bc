import { describe, expect, it } from 'vitest';
import type { LayerCosts } from './costs.js';
import { describeHeteroRow, searchHetero, type CardPool } from './heteroSearch.js';

/** attention: per sequence; FFN: weight-read floor + per token; link: latency only. */
const costs = (attnPerSeq: number, ffnFixed: number): LayerCosts => ({
  numLayers: 10, bytesPerToken: 1, attentionMs: (b) => attnPerSeq * b, ffnMs: (t) => ffnFixed + 0.001 * t, linkLatencyMs: 0.001, linkTransferMs: () => 0, linkSource: 'test',
});
// "mem": fast memory, weak compute: cheap attention, slow FFN floor. "flop": the opposite.
const mem: CardPool = { card: 'mem', gpus: 4, costs: costs(0.05, 1.5) };
const flop: CardPool = { card: 'flop', gpus: 4, costs: costs(0.2, 0.2) };
const q = { tpotMs: 40, context: 128, maxBatch: 64, stageCounts: [1, 2] };

describe('heterogeneous search', () => {
  it('puts attention on the card that is cheap at attention and the FFN on the card that is cheap at FFN', () => {
    const r = searchHetero([mem, flop], q);
    expect(r.useAfd).toBe(true);
    expect(r.rows[0]).toMatchObject({ kind: 'afd', attentionCard: 'mem', ffnCard: 'flop' });
    expect(r.reason).toMatch(/^use AFD: A on mem, F on flop: \d+A\dF/);
    const coloc = r.rows.find((x) => x.kind === 'colocated')!;
    expect(r.rows[0]!.tokensPerSPerGpu).toBeGreaterThan(coloc.tokensPerSPerGpu);
    for (let i = 1; i < r.rows.length; i++) expect(r.rows[i - 1]!.tokensPerSPerGpu).toBeGreaterThanOrEqual(r.rows[i]!.tokensPerSPerGpu);
    for (const row of r.rows) {
      expect(row.tpotMs).toBeLessThanOrEqual(40);
      for (const pool of [mem, flop]) {
        const g = row.gpus[pool.card]!;
        expect(g.afd + g.colocated + g.idle).toBe(pool.gpus);
      }
      expect(row.tokensPerSPerGpu).toBeCloseTo(row.tokensPerS / 8, 9);
      if (row.kind === 'afd' && row.attentionCard !== row.ffnCard) {
        expect(row.gpus[row.attentionCard!]!.afd).toBe(row.attention * row.replicas);
        expect(row.gpus[row.ffnCard!]!.afd).toBe(row.ffn * row.replicas);
      }
    }
    expect(r.bestByPrice).toBeNull();
  });

  it('colocated replicas of every kind: each kind at its own best batch, the sum over the cluster', () => {
    const r = searchHetero([mem, flop], { ...q, stageCounts: [1] });
    const coloc = r.rows.find((x) => x.kind === 'colocated')!;
    expect(describeHeteroRow(coloc)).toBe('colocated: 4 mem + 4 flop');
    // mem: 10 x (0.05 b + 1.5 + 0.001 b) <= 40 -> b = 32 (32.3 ms): 32 / 0.0323 s; flop: 10 x (0.2 b + 0.2 + 0.001 b) -> b = 16 (34.2 ms)
    const memRate = (32 * 1000) / (10 * (0.05 * 32 + 1.5 + 0.032));
    const flopRate = (16 * 1000) / (10 * (0.2 * 16 + 0.2 + 0.016));
    expect(coloc.tokensPerS).toBeCloseTo(4 * memRate + 4 * flopRate, 6);
  });

  it('with prices, also names the best plan per unit of price, counting only the GPUs in use', () => {
    const r = searchHetero([{ ...mem, pricePerGpu: 1 }, { ...flop, pricePerGpu: 10 }], q);
    expect(r.bestByPrice).not.toBeNull();
    for (const row of r.rows) {
      const price = row.gpus.mem!.afd + row.gpus.mem!.colocated + 10 * (row.gpus.flop!.afd + row.gpus.flop!.colocated);
      expect(row.tokensPerSPerPrice).toBeCloseTo(row.tokensPerS / price, 9);
    }
    expect(r.bestByPrice!.tokensPerSPerPrice).toBe(Math.max(...r.rows.map((x) => x.tokensPerSPerPrice!)));
    expect(r.reason).toMatch(/; per unit of price the best is .* tok\/s per price unit\)$/);
  });

  it('with a memory model per kind: no FFN rank or colocated replica where the weights do not fit, attention batches bounded by KV', () => {
    // 40 GB cards: the 56 GB of FFN weights do not fit, 5 GB of attention weights + KV of up to 8 sequences of 128 tokens do
    const small = { deviceBytes: 40e9, weightBytes: 61e9, attentionWeightBytes: 5e9, ffnWeightBytes: 56e9, kvBytesPerToken: 20e6, notes: [] };
    const r = searchHetero([{ ...mem, memory: small }, { ...flop, memory: { ...small, deviceBytes: 80e9 } }], q);
    expect(r.rows.some((row) => row.kind === 'afd')).toBe(true);
    for (const row of r.rows.filter((x) => x.kind === 'afd')) {
      expect(row.ffnCard).toBe('flop');
      if (row.attentionCard === 'mem') expect(row.batchPerRank).toBeLessThanOrEqual(8);
    }
    expect(r.rows.find((x) => x.kind === 'colocated')!.gpus.mem).toEqual({ afd: 0, colocated: 0, idle: 4 });
  });

  it('says so when nothing meets the target', () => {
    const r = searchHetero([mem, flop], { ...q, tpotMs: 1 });
    expect(r.rows).toEqual([]);
    expect(r.reason).toMatch(/^nothing meets TPOT <= 1 ms on any card or pairing/);
  });
});
