import { describe, expect, it } from 'vitest';
import type { LayerCosts } from './costs.js';
import { mixedCosts } from './mixedCosts.js';
import { simulateAfd } from './stepSimulator.js';

const costs = (attn: number, ffn: number, layers = 4): LayerCosts => ({
  numLayers: layers, bytesPerToken: 100, attentionMs: () => attn, ffnMs: () => ffn, linkLatencyMs: 0.01, linkTransferMs: (b) => b / 1e6, linkSource: 'test',
});

describe('mixedCosts', () => {
  it('takes attention from one side, FFN from the other, the link from the attention side', () => {
    const m = mixedCosts(costs(1, 9), costs(8, 2));
    expect(m.attentionMs(4, 100)).toBe(1);
    expect(m.ffnMs(4)).toBe(2);
    // one stage, 1A1F: 4 layers x (attention 1 + send 4 x 100 B at 1e6 B/ms + 0.01 + FFN 2 + back 0.0004 + 0.01)
    expect(simulateAfd(m, { attention: 1, ffn: 1, stages: 1 }, { batchPerRank: 4, context: 100 }).tpotMs).toBeCloseTo(4 * (1 + 0.0004 + 0.01 + 2 + 0.0004 + 0.01), 9);
  });

  it('a rank of g GPUs moves its bytes g times as fast; mismatched layer counts are refused', () => {
    expect(mixedCosts(costs(1, 1), costs(1, 1), 4).linkTransferMs(4e6)).toBeCloseTo(1, 12);
    expect(() => mixedCosts(costs(1, 1, 4), costs(1, 1, 5))).toThrow(/4 layers and the FFN profile 5/);
  });
});
