import { describe, expect, it } from 'vitest';
import type { LayerCosts } from './costs.js';
import { blockSizes, simulateAfd, simulateBlock, simulateColocated, stageBatches } from './stepSimulator.js';

/** Linear costs: attention a ms per sequence, FFN f ms per token, link lat + bytes * perByte. */
function costs(L: number, a: number, f: number, lat = 0, perByte = 0): LayerCosts {
  return { numLayers: L, bytesPerToken: 100, attentionMs: (b) => a * b, ffnMs: (t) => f * t, linkLatencyMs: lat, linkTransferMs: (bytes) => bytes * perByte, linkSource: 'test' };
}

describe('step simulator: closed-form cases', () => {
  it('one stage, no overlap: the step is the sum of its parts', () => {
    // per layer: attention 4 x 0.5, send 0.1 + 400 B x 0.001, FFN 4 x 0.25, send back the same
    const c = costs(10, 0.5, 0.25, 0.1, 0.001);
    const link = 0.1 + 400 * 0.001;
    const r = simulateAfd(c, { attention: 1, ffn: 1, stages: 1 }, { batchPerRank: 4, context: 1 });
    expect(r.tpotMs).toBeCloseTo(10 * (2 + link + 1 + link), 9);
    expect(r.tokensPerS).toBeCloseTo(4000 / r.tpotMs, 9);
    expect(r.gpus).toBe(2);
    expect(r.tokensPerSPerGpu).toBeCloseTo(r.tokensPerS / 2, 9);
  });

  it('perfect overlap: two equal stages with a free link give the larger half plus one stage of fill', () => {
    // stage cost 1 ms on both sides: A0 A1 / F0 F1 interleave, per layer 2 ms = max(attention, FFN)
    const L = 48;
    const r = simulateAfd(costs(L, 0.5, 0.5), { attention: 1, ffn: 1, stages: 2 }, { batchPerRank: 4, context: 1 });
    expect(r.tpotMs).toBeCloseTo(2 * L + 1, 9); // max of parts (2 L) + fill
    expect(r.ffnBusy).toBeCloseTo((2 * L) / (2 * L + 1), 9);
  });

  it('overlap when one side dominates: the step tends to the slower half', () => {
    const L = 100;
    const r = simulateAfd(costs(L, 1, 0.25), { attention: 1, ffn: 1, stages: 2 }, { batchPerRank: 4, context: 1 });
    // attention 2 ms per stage, FFN 0.5 ms per stage: the attention rank never waits
    expect(r.tpotMs).toBeCloseTo(4 * L + 0.5, 9);
  });

  it('N micro-batches hide a link round trip the one-stage step pays', () => {
    const c = costs(8, 0.25, 0.05, 1);
    const one = simulateAfd(c, { attention: 1, ffn: 1, stages: 1 }, { batchPerRank: 8, context: 1 });
    const four = simulateAfd(c, { attention: 1, ffn: 1, stages: 4 }, { batchPerRank: 8, context: 1 });
    expect(one.tpotMs).toBeCloseTo(8 * (2 + 1 + 0.4 + 1), 9);
    // per layer: attention 2 ms in four 0.5 ms stages; each stage's 2.1 ms round trip overlaps the next stages
    expect(four.tpotMs).toBeLessThan(one.tpotMs * 0.75);
    expect(four.tpotMs).toBeGreaterThanOrEqual(8 * 2);
  });

  it('a block of two attention ranks: the FFN runs both ranks rows at once, the F->A slices go one after the other', () => {
    const c = costs(1, 1, 0.5, 0, 0.00125);
    // each rank: attention 2 (batch 2), 200 B take 0.25 -> both arrive at 2.25; FFN of 4 rows: 2 -> 4.25; slices at 4.5 and 4.75
    expect(simulateBlock(c, 2, 1, { batchPerRank: 2, context: 1 })).toEqual({ stepMs: 4.75, ffnBusyMs: 2 });
  });

  it('colocated: attention then FFN on one GPU, every layer', () => {
    const r = simulateColocated(costs(10, 0.5, 0.25, 5), { batchPerRank: 4, context: 1 });
    expect(r.tpotMs).toBeCloseTo(10 * (2 + 1), 9);
    expect(r.tokensPerSPerGpu).toBeCloseTo(4000 / 30, 9);
  });

  it('3A2F: blocks of 2 and 1; the slower block sets the TPOT, both count toward tokens/s', () => {
    const c = costs(1, 1, 1);
    const r = simulateAfd(c, { attention: 3, ffn: 2, stages: 1 }, { batchPerRank: 1, context: 1 });
    expect(r.tpotMs).toBe(3); // block of 2: attention 1, FFN 2 rows = 2
    expect(r.tokensPerS).toBeCloseTo(2000 / 3 + 1000 / 2, 9);
  });
});

describe('topology helpers', () => {
  it('block sizes and stage batches differ by at most one', () => {
    expect(blockSizes(3, 2)).toEqual([2, 1]);
    expect(blockSizes(4, 4)).toEqual([1, 1, 1, 1]);
    expect(stageBatches(5, 2)).toEqual([3, 2]);
    expect(() => blockSizes(1, 2)).toThrow(/x >= y/);
    expect(() => stageBatches(1, 2)).toThrow(/2 stages cannot split a batch of 1/);
  });
});
