import { describe, expect, it } from 'vitest';
import { busiestRankRows, expectedMaxNormal, imbalanceFactor } from './epImbalance.js';
import { allToAllMs, epImbalance, ffnEpLayerMs, ffnEpNote, simulateEpOnly } from './expertParallel.js';
import { a2fBytesPerToken, gateNote } from './gateSide.js';
import { simulateAfd } from './stepSimulator.js';
import { linearCosts } from './testCosts.js';

const moe = { numExperts: 8, topK: 2 };

describe('expert parallelism: closed-form cases', () => {
  it('an all-to-all sends rows x top-k x (n-1)/n hidden states over one hop; none in a group of one', () => {
    const c = linearCosts(1, 1, 1, 0.01, 0.001, { moe });
    expect(allToAllMs(c, 8, 4)).toBeCloseTo(0.01 + 8 * 2 * 100 * 0.75 * 0.001, 12);
    expect(allToAllMs(c, 8, 1)).toBe(0);
    expect(allToAllMs(linearCosts(1, 1, 1, 0, 0.001), 8, 2)).toBeCloseTo(8 * 100 * 0.5 * 0.001, 12); // dense: top-k 1
  });

  it('per-rank FFN: the measured EP curve where there is one, else ffn(group tokens) / n (at the busiest rank unless balanced), and the note says which', () => {
    const scaled = linearCosts(1, 1, 0.5, 0, 0, { moe, epBalanced: true });
    expect(ffnEpLayerMs(scaled, 16, 4)).toBeCloseTo(2, 12);
    expect(ffnEpNote(scaled, 4)).toBe('FFN at EP 4 scaled: ffn(tokens of the group) / 4 (no EP curve in the profile), ranks taken as balanced');
    const busiest = linearCosts(1, 1, 0.5, 0, 0, { moe });
    expect(ffnEpLayerMs(busiest, 16, 4)).toBeCloseTo((0.5 * 16 * imbalanceFactor(16, 2, 8, 4)) / 4, 12);
    expect(ffnEpNote(busiest, 4)).toBe("FFN at EP 4 scaled: ffn(tokens of the group) / 4 (no EP curve in the profile), at the busiest rank's rows (uniform routing)");
    const measured = linearCosts(1, 1, 0.5, 0, 0, { moe, ffnEpMs: (t, n) => (n === 4 ? 0.3 * t : undefined) });
    expect(ffnEpLayerMs(measured, 16, 4)).toBeCloseTo(4.8, 12);
    expect(ffnEpNote(measured, 4)).toBe('FFN at EP 4 measured');
  });

  it('EP-only: attention, dispatch, FFN of 1/n of the experts over the rows of the group, combine; every layer', () => {
    const c = linearCosts(10, 0.5, 0.25, 0.1, 0, { moe, epBalanced: true });
    const r = simulateEpOnly(c, 4, { batchPerRank: 8, context: 1 });
    expect(r.tpotMs).toBeCloseTo(10 * (4 + 2 * 0.1 + (0.25 * 32) / 4), 9);
    expect(r.gpus).toBe(4);
    expect(r.tokensPerS).toBeCloseTo((32 * 1000) / r.tpotMs, 9);
  });

  it('xAyF with its FFN ranks as one EP group: an all-to-all each side of an FFN that runs the whole group over y', () => {
    const c = linearCosts(10, 0.5, 0.25, 0.1, 0, { moe: { numExperts: 8, topK: 1 }, epBalanced: true });
    const w = { batchPerRank: 4, context: 1 };
    const plain = simulateAfd(c, { attention: 2, ffn: 2, stages: 1 }, w);
    const ep = simulateAfd(c, { attention: 2, ffn: 2, stages: 1, ffnEp: true }, w);
    // per layer: attention 2, send 0.1, dispatch 0.1, FFN 0.25 x 8 / 2 = 1, combine 0.1, send back 0.1
    expect(plain.tpotMs).toBeCloseTo(10 * (2 + 0.1 + 1 + 0.1), 9);
    expect(ep.tpotMs).toBeCloseTo(10 * (2 + 0.1 + 0.1 + 1 + 0.1 + 0.1), 9);
  });
});

/** Mean over `trials` of the busiest rank's routed rows: `tokens` tokens, each to `topK` distinct of `experts` (E/n per rank), a seeded RNG. */
function monteCarloBusiest(tokens: number, topK: number, experts: number, epSize: number, trials: number, seed: number): number {
  let state = seed;
  const random = () => {
    // mulberry32
    state = (state + 0x6d2b79f5) | 0;
    let t = Math.imul(state ^ (state >>> 15), 1 | state);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const ids = Array.from({ length: experts }, (_, i) => i);
  let sum = 0;
  for (let trial = 0; trial < trials; trial++) {
    const rows = new Array<number>(epSize).fill(0);
    for (let t = 0; t < tokens; t++) {
      for (let j = 0; j < topK; j++) {
        // a partial Fisher-Yates shuffle: topK distinct experts
        const pick = j + Math.floor(random() * (experts - j));
        [ids[j], ids[pick]] = [ids[pick]!, ids[j]!];
        rows[Math.floor(ids[j]! / (experts / epSize))]! += 1;
      }
    }
    sum += Math.max(...rows);
  }
  return sum / trials;
}

describe('EP load imbalance (uniform routing)', () => {
  it('a group of one, a dense model, or balanced costs: no change', () => {
    expect(imbalanceFactor(64, 8, 128, 1)).toBe(1);
    expect(busiestRankRows(64, 8, 128, 1)).toBe(64 * 8);
    expect(epImbalance(linearCosts(1, 1, 1), 64, 4)).toBe(1);
    expect(epImbalance(linearCosts(1, 1, 1, 0, 0, { moe, epBalanced: true }), 64, 4)).toBe(1);
    const c = linearCosts(1, 1, 0.5, 0, 0, { moe });
    expect(ffnEpLayerMs(c, 16, 1)).toBe(c.ffnMs(16));
  });

  it('E[max of n standard normals]: 1/sqrt(pi) for two, the tabulated values beyond', () => {
    expect(expectedMaxNormal(2)).toBeCloseTo(1 / Math.sqrt(Math.PI), 4);
    expect(expectedMaxNormal(4)).toBeCloseTo(1.0294, 2);
    expect(expectedMaxNormal(8)).toBeCloseTo(1.4236, 2);
  });

  it('the factor grows with the group and shrinks with the tokens', () => {
    for (const tokens of [16, 256]) {
      const byRanks = [2, 4, 8, 16, 32].map((n) => imbalanceFactor(tokens, 8, 128, n));
      for (let i = 1; i < byRanks.length; i++) expect(byRanks[i]!).toBeGreaterThan(byRanks[i - 1]!);
    }
    const byTokens = [4, 16, 64, 256, 1024, 4096].map((t) => imbalanceFactor(t, 8, 128, 8));
    for (let i = 1; i < byTokens.length; i++) expect(byTokens[i]!).toBeLessThan(byTokens[i - 1]!);
    expect(byTokens[byTokens.length - 1]!).toBeLessThan(1.03);
    // never more than a rank can take: each token at most min(k, E/n) rows on one rank
    expect(busiestRankRows(1, 8, 16, 8)).toBeLessThanOrEqual(2);
  });

  it('matches a Monte Carlo of the routing within 3% from 8 mean rows per rank up', () => {
    for (const [experts, topK, epSize, tokens] of [[128, 8, 4, 16], [128, 8, 8, 64], [128, 8, 16, 256], [256, 8, 32, 1024], [8, 2, 4, 16], [48, 3, 8, 64]] as const) {
      const simulated = monteCarloBusiest(tokens, topK, experts, epSize, 300, 42);
      expect(Math.abs(busiestRankRows(tokens, topK, experts, epSize) / simulated - 1)).toBeLessThan(0.03);
    }
  });
});

describe('gate side', () => {
  it('gate on attention: E fp32 logits more per token on the wire, the router time moves to attention', () => {
    const c = linearCosts(10, 0.5, 0.25, 0, 0.001, { moe, gateMs: (t) => 0.05 * t });
    expect(a2fBytesPerToken(c, 'ffn')).toBe(100);
    expect(a2fBytesPerToken(c, 'attention')).toBe(100 + 8 * 4);
    const w = { batchPerRank: 4, context: 1 };
    const onFfn = simulateAfd(c, { attention: 1, ffn: 1, stages: 1, gate: 'ffn' }, w);
    const onAttn = simulateAfd(c, { attention: 1, ffn: 1, stages: 1, gate: 'attention' }, w);
    // one stage: the router's 0.2 ms moves sides (no change), the 4 x 32 B of logits take 0.128 ms more per layer
    expect(onAttn.tpotMs - onFfn.tpotMs).toBeCloseTo(10 * 4 * 32 * 0.001, 9);
    expect(onAttn.ffnBusy * onAttn.tpotMs).toBeCloseTo(10 * (1 - 0.2), 9);
    expect(gateNote(c, 'attention')).toBe('gate on attention (+32 B of logits per token)');
    expect(gateNote(linearCosts(1, 1, 1, 0, 0, { moe }), 'ffn')).toBe('gate on FFN; router time unmeasured (0 ms)');
  });

  it('a dense model sends no logits whatever the side', () => {
    expect(a2fBytesPerToken(linearCosts(1, 1, 1), 'attention')).toBe(100);
  });
});
