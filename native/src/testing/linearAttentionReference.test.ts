import { describe, expect, it } from 'vitest';
import { Rng } from './engineOps.js';
import { type GdnDims, type GdnInputs, type LinearBatch, refCausalConv1d, refGatedDeltaRule, refGdnGating, softplus } from './linearAttentionReference.js';

// The float64 references checked against each other: HF's chunked gated delta rule is a
// faster evaluation of the recurrence, so the two must agree to rounding; and splitting a
// sequence into chunks that continue from the state must not change anything.

const dims: GdnDims = { Hk: 2, Hv: 4, Dk: 6, Dv: 5 };

function rand(rng: Rng, n: number, f: (u: number) => number = (u) => u): Float64Array {
  return Float64Array.from({ length: n }, () => f(rng.next()));
}

function gdnInputs(rng: Rng, T: number): GdnInputs {
  return {
    q: rand(rng, T * dims.Hk * dims.Dk),
    k: rand(rng, T * dims.Hk * dims.Dk),
    v: rand(rng, T * dims.Hv * dims.Dv, (u) => 2 * u),
    // Log decays in (-1.5, 0] and betas in (0, 1), the ranges the model's g and sigmoid(b) give.
    g: rand(rng, T * dims.Hv, (u) => -0.75 * (u + 1)),
    beta: rand(rng, T * dims.Hv, (u) => 1 / (1 + Math.exp(-3 * u))),
  };
}

const maxAbsDiff = (a: Float64Array, b: Float64Array): number => a.reduce((m, v, i) => Math.max(m, Math.abs(v - b[i]!)), 0);

/** Tokens [t0, t1) of every input. */
function slice(inp: GdnInputs, t0: number, t1: number): GdnInputs {
  const { Hk, Hv, Dk, Dv } = dims;
  return {
    q: inp.q.slice(t0 * Hk * Dk, t1 * Hk * Dk),
    k: inp.k.slice(t0 * Hk * Dk, t1 * Hk * Dk),
    v: inp.v.slice(t0 * Hv * Dv, t1 * Hv * Dv),
    g: inp.g.slice(t0 * Hv, t1 * Hv),
    beta: inp.beta.slice(t0 * Hv, t1 * Hv),
  };
}

describe('linear-attention float64 references', () => {
  it.each([1, 2, 5, 13, 33])('chunked gated delta rule equals the recurrence over %i tokens, every chunk size', (T) => {
    const rng = new Rng(100 + T);
    const inp = gdnInputs(rng, T);
    const state = rand(rng, 2 * dims.Hv * dims.Dk * dims.Dv);
    // Two sequences sharing the tokens: the first starts from zero, the second from slot 0.
    const cut = Math.floor(T / 2);
    const batch: LinearBatch = { seqStarts: [0, cut, T], stateSlots: [1, 0], hasState: [0, 1] };
    const rec = refGatedDeltaRule(inp, dims, state, batch);
    for (const chunk of [1, 3, 4, 7, 16, 64]) {
      const ch = refGatedDeltaRule(inp, dims, state, batch, chunk);
      expect(maxAbsDiff(ch.out, rec.out)).toBeLessThan(1e-9);
      expect(maxAbsDiff(ch.state, rec.state)).toBeLessThan(1e-9);
    }
    // The rule really moved the state and wrote every token.
    expect(maxAbsDiff(rec.state, state)).toBeGreaterThan(1e-3);
    expect(rec.out.every((v) => v !== 0)).toBe(true);
  });

  it('a gated delta rule prefill split into chunks that continue from the state equals the one-shot prefill', () => {
    const rng = new Rng(7);
    const T = 17;
    const inp = gdnInputs(rng, T);
    const zero = new Float64Array(dims.Hv * dims.Dk * dims.Dv);
    const whole = refGatedDeltaRule(inp, dims, zero, { seqStarts: [0, T], stateSlots: [0], hasState: [0] }, 4);
    const a = refGatedDeltaRule(slice(inp, 0, 6), dims, zero, { seqStarts: [0, 6], stateSlots: [0], hasState: [0] });
    const b = refGatedDeltaRule(slice(inp, 6, T), dims, a.state, { seqStarts: [0, T - 6], stateSlots: [0], hasState: [1] }, 5);
    expect(maxAbsDiff(Float64Array.from([...a.out, ...b.out]), whole.out)).toBeLessThan(1e-9);
    expect(maxAbsDiff(b.state, whole.state)).toBeLessThan(1e-9);
  });

  it('the causal conv split into chunks (shorter than the kernel too) equals the one-shot conv, state included', () => {
    const rng = new Rng(9);
    const C = 3;
    const W = 4;
    const T = 9;
    const x = rand(rng, T * C);
    const w = rand(rng, C * W);
    const zero = new Float64Array(C * (W - 1));
    const whole = refCausalConv1d(x, w, zero, C, W, { seqStarts: [0, T], stateSlots: [0], hasState: [0] });
    let state: Float64Array = zero;
    const outs: number[] = [];
    for (const [t0, t1] of [[0, 1], [1, 3], [3, 4], [4, 9]] as const) {
      const r = refCausalConv1d(x.slice(t0 * C, t1 * C), w, state, C, W, { seqStarts: [0, t1 - t0], stateSlots: [0], hasState: [t0 === 0 ? 0 : 1] });
      outs.push(...r.out);
      state = r.convState;
    }
    expect(maxAbsDiff(Float64Array.from(outs), whole.out)).toBeLessThan(1e-12);
    expect(Array.from(state)).toEqual(Array.from(whole.convState));
    // The state holds the last W - 1 inputs, oldest first, per channel.
    expect(Array.from(state.subarray(0, W - 1))).toEqual([x[6 * C]!, x[7 * C]!, x[8 * C]!]);
  });

  it('the gates: softplus is continuous at its threshold of 20, g is never positive, beta = sigmoid(b)', () => {
    // log1p(exp(20)) = 20 + 2e-9: the linear branch above 20 is the same function to f32 precision.
    expect(Math.abs(softplus(20) - 20)).toBeLessThan(3e-9);
    expect(softplus(20.5)).toBe(20.5);
    expect(softplus(-30)).toBeCloseTo(Math.exp(-30), 20);
    const a = Float64Array.from([25, -40, 0, 3]);
    const r = refGdnGating(a, Float64Array.from([0, 50, -50, 1]), Float64Array.from([0, Math.log(2)]), Float64Array.from([1, -1]));
    const want = [-26, -2 * Math.log1p(Math.exp(-41)), -Math.log1p(Math.E), -2 * Math.log1p(Math.exp(2))];
    want.forEach((w, i) => expect(Math.abs(r.g[i]! - w)).toBeLessThanOrEqual(1e-12 * Math.abs(w)));
    expect(r.beta[0]).toBe(0.5);
    expect(r.beta[1]).toBeCloseTo(1, 15);
    expect(r.beta[2]).toBeCloseTo(0, 15);
    expect(r.g.every((g) => g <= 0)).toBe(true);
  });
});
