import { describe, expect, it } from 'vitest';
import { allToAllMs, ffnEpLayerMs, ffnEpNote, simulateEpOnly } from './expertParallel.js';
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

  it('per-rank FFN: the measured EP curve where there is one, else ffn(group tokens) / n, and the note says which', () => {
    const scaled = linearCosts(1, 1, 0.5, 0, 0, { moe });
    expect(ffnEpLayerMs(scaled, 16, 4)).toBeCloseTo(2, 12);
    expect(ffnEpNote(scaled, 4)).toBe('FFN at EP 4 scaled: ffn(tokens of the group) / 4 (no EP curve in the profile)');
    const measured = linearCosts(1, 1, 0.5, 0, 0, { moe, ffnEpMs: (t, n) => (n === 4 ? 0.3 * t : undefined) });
    expect(ffnEpLayerMs(measured, 16, 4)).toBeCloseTo(4.8, 12);
    expect(ffnEpNote(measured, 4)).toBe('FFN at EP 4 measured');
  });

  it('EP-only: attention, dispatch, FFN of 1/n of the experts over the rows of the group, combine; every layer', () => {
    const c = linearCosts(10, 0.5, 0.25, 0.1, 0, { moe });
    const r = simulateEpOnly(c, 4, { batchPerRank: 8, context: 1 });
    expect(r.tpotMs).toBeCloseTo(10 * (4 + 2 * 0.1 + (0.25 * 32) / 4), 9);
    expect(r.gpus).toBe(4);
    expect(r.tokensPerS).toBeCloseTo((32 * 1000) / r.tpotMs, 9);
  });

  it('xAyF with its FFN ranks as one EP group: an all-to-all each side of an FFN that runs the whole group over y', () => {
    const c = linearCosts(10, 0.5, 0.25, 0.1, 0, { moe: { numExperts: 8, topK: 1 } });
    const w = { batchPerRank: 4, context: 1 };
    const plain = simulateAfd(c, { attention: 2, ffn: 2, stages: 1 }, w);
    const ep = simulateAfd(c, { attention: 2, ffn: 2, stages: 1, ffnEp: true }, w);
    // per layer: attention 2, send 0.1, dispatch 0.1, FFN 0.25 x 8 / 2 = 1, combine 0.1, send back 0.1
    expect(plain.tpotMs).toBeCloseTo(10 * (2 + 0.1 + 1 + 0.1), 9);
    expect(ep.tpotMs).toBeCloseTo(10 * (2 + 0.1 + 0.1 + 1 + 0.1 + 0.1), 9);
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
