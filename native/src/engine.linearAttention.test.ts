import { describe, expect, it } from 'vitest';
import { type CaseTensor, Rng, intTensor, randTensor } from './testing/engineOps.js';
import { type GdnDims, type GdnInputs, type LinearBatch, refCausalConv1d, refGatedDeltaRule, refGdnGating, refRmsNormGated } from './testing/linearAttentionReference.js';
import { loadTestingAddon, type OpBackend, type OpTensor } from './testing/testingAddon.js';

// The linear-attention ops of Qwen3-Next / Qwen3.5 (core/backend.h) on the CPU backend
// against the float64 references of testing/linearAttentionReference.ts: batches of
// sequences of different lengths in state slots out of order, prefills split into chunks
// that continue from the state, decode steps, closed-form checks of the gating and the
// delta rule, the delta rule's gates (gdnGating), and the shape errors.

const addon = loadTestingAddon();
const cpu: OpBackend = { name: 'cpu', threads: 2 };
const run = (op: string, inputs: Record<string, OpTensor>, params: Record<string, number> = {}) => addon.runOp(cpu, op, inputs, params);
const TOL = 1e-4;

/** Every element within tol of the reference, relative where |ref| > 1. */
function expectClose(got: ArrayLike<number>, ref: ArrayLike<number>, tol = TOL): void {
  expect(got.length).toBe(ref.length);
  let worst = 0;
  for (let i = 0; i < ref.length; i++) worst = Math.max(worst, Math.abs(got[i]! - ref[i]!) / Math.max(1, Math.abs(ref[i]!)));
  expect(worst).toBeLessThan(tol);
}

/** An f32 tensor of the given values (rounded to f32, and the reference sees the rounded ones). */
function f32Case(values: ArrayLike<number>, shape: number[]): CaseTensor {
  const data = Float32Array.from(values);
  return { op: { dtype: 'f32', shape, data }, values: Float64Array.from(data) };
}

function batchOps(b: LinearBatch): Record<string, OpTensor> {
  return { seqStarts: intTensor(b.seqStarts), stateSlots: intTensor(b.stateSlots), hasState: intTensor(b.hasState) };
}

const dims: GdnDims = { Hk: 2, Hv: 4, Dk: 12, Dv: 9 };
const stateShape = (numSlots: number): number[] => [numSlots, dims.Hv, dims.Dk, dims.Dv];

/** Random rule inputs of T tokens: log decays in (-1.5, 0], betas in (0, 1) like the model's. */
function gdnCase(rng: Rng, T: number): { ops: Record<string, OpTensor>; inp: GdnInputs } {
  const { Hk, Hv, Dk, Dv } = dims;
  const q = randTensor(rng, [T, Hk, Dk], 'f32', 2);
  const k = randTensor(rng, [T, Hk, Dk], 'f32', 2);
  const v = randTensor(rng, [T, Hv, Dv], 'f32', 3);
  const g = f32Case(Array.from({ length: T * Hv }, () => -0.75 * (rng.next() + 1)), [T, Hv]);
  const beta = f32Case(Array.from({ length: T * Hv }, () => 1 / (1 + Math.exp(-3 * rng.next()))), [T, Hv]);
  return {
    ops: { q: q.op, k: k.op, v: v.op, g: g.op, beta: beta.op },
    inp: { q: q.values, k: k.values, v: v.values, g: g.values, beta: beta.values },
  };
}

/** Tokens [t0, t1) of a case, as op tensors and reference inputs. */
function sliceCase(c: { inp: GdnInputs }, t0: number, t1: number): { ops: Record<string, OpTensor>; inp: GdnInputs } {
  const { Hk, Hv, Dk, Dv } = dims;
  const part = (a: Float64Array, row: number, shape: number[]): CaseTensor => f32Case(a.subarray(t0 * row, t1 * row), [t1 - t0, ...shape]);
  const ts = { q: part(c.inp.q, Hk * Dk, [Hk, Dk]), k: part(c.inp.k, Hk * Dk, [Hk, Dk]), v: part(c.inp.v, Hv * Dv, [Hv, Dv]), g: part(c.inp.g, Hv, [Hv]), beta: part(c.inp.beta, Hv, [Hv]) };
  return {
    ops: Object.fromEntries(Object.entries(ts).map(([n, t]) => [n, t.op])),
    inp: { q: ts.q.values, k: ts.k.values, v: ts.v.values, g: ts.g.values, beta: ts.beta.values },
  };
}

/** Concatenates the per-token rows of several cases (a batch of sequences). */
function concatCases(parts: { inp: GdnInputs }[]): { ops: Record<string, OpTensor>; inp: GdnInputs } {
  const cat = (f: (i: GdnInputs) => Float64Array) => Float64Array.from(parts.flatMap((p) => Array.from(f(p.inp))));
  const whole = { inp: { q: cat((i) => i.q), k: cat((i) => i.k), v: cat((i) => i.v), g: cat((i) => i.g), beta: cat((i) => i.beta) } };
  return sliceCase(whole, 0, whole.inp.g.length / dims.Hv);
}

describe('causalConv1d (cpu) vs the float64 reference', () => {
  const C = 70; // two channel blocks of the CPU op
  const W = 4;

  it('three sequences of 1, 3 and 17 tokens in slots [2, 0, 3], from state and from zero', () => {
    const rng = new Rng(1);
    const batch: LinearBatch = { seqStarts: [0, 1, 4, 21], stateSlots: [2, 0, 3], hasState: [1, 0, 1] };
    const x = randTensor(rng, [21, C], 'f32', 2);
    const w = randTensor(rng, [C, W], 'bf16');
    // Slot 0 holds stale values its sequence must ignore; slot 1 belongs to no sequence.
    const state = randTensor(rng, [4, C, W - 1], 'f32', 2);
    const r = run('causalConv1d', { x: x.op, weight: w.op, convState: state.op, ...batchOps(batch) }, { maxSeqLen: 17 });
    const ref = refCausalConv1d(x.values, w.values, state.values, C, W, batch);
    expectClose(r.out!, ref.out, 1e-5);
    // The state is a copy of inputs (or of the old state): exact.
    expect(Array.from(r.convState!)).toEqual(Array.from(ref.convState));
    expect(Array.from(r.convState!.subarray(C * (W - 1), 2 * C * (W - 1)))).toEqual(Array.from(state.values.subarray(C * (W - 1), 2 * C * (W - 1))));
  });

  it('a prefill split into chunks (one shorter than the kernel), then decode steps, equals the one-shot run; in place too', () => {
    const rng = new Rng(2);
    const T = 20;
    const x = randTensor(rng, [T, C], 'f32');
    const w = randTensor(rng, [C, W], 'f32');
    const zero = f32Case(new Float64Array(C * (W - 1)), [1, C, W - 1]);
    const xs = x.op.data as Float32Array;
    const whole = run('causalConv1d', { x: x.op, weight: w.op, convState: zero.op, ...batchOps({ seqStarts: [0, T], stateSlots: [0], hasState: [0] }) });
    expectClose(whole.out!, refCausalConv1d(x.values, w.values, zero.values, C, W, { seqStarts: [0, T], stateSlots: [0], hasState: [0] }).out, 1e-5);
    let state = zero.op;
    const outs: number[] = [];
    for (const [t0, t1] of [[0, 2], [2, 17], [17, 18], [18, 19], [19, 20]] as const) {
      const part: OpTensor = { dtype: 'f32', shape: [t1 - t0, C], data: xs.slice(t0 * C, t1 * C) };
      const r = run('causalConv1d', { x: part, weight: w.op, convState: state, ...batchOps({ seqStarts: [0, t1 - t0], stateSlots: [0], hasState: [t0 === 0 ? 0 : 1] }) }, { inPlace: 1 });
      outs.push(...r.x!);
      state = { dtype: 'f32', shape: [1, C, W - 1], data: r.convState! };
    }
    expect(outs).toEqual(Array.from(whole.out!));
    expect(Array.from(state.data)).toEqual(Array.from(whole.convState!));
  });
});

describe('gatedDeltaRule (cpu) vs the float64 reference', () => {
  it('three sequences of 1, 3 and 17 tokens in slots [2, 0, 3] (Hv = 2 Hk, Dk != Dv)', () => {
    const rng = new Rng(3);
    const batch: LinearBatch = { seqStarts: [0, 1, 4, 21], stateSlots: [2, 0, 3], hasState: [1, 0, 1] };
    const c = gdnCase(rng, 21);
    const state = randTensor(rng, stateShape(4), 'f32', 0.5);
    const r = run('gatedDeltaRule', { ...c.ops, state: state.op, ...batchOps(batch) }, { maxSeqLen: 17 });
    const ref = refGatedDeltaRule(c.inp, dims, state.values, batch);
    expectClose(r.out!, ref.out);
    expectClose(r.state!, ref.state);
    // HF's chunked evaluation (an independent derivation) agrees too.
    expectClose(r.out!, refGatedDeltaRule(c.inp, dims, state.values, batch, 8).out);
    const slot = dims.Hv * dims.Dk * dims.Dv;
    expect(Array.from(r.state!.subarray(slot, 2 * slot))).toEqual(Array.from(state.values.subarray(slot, 2 * slot)));
  });

  it('two sequences prefilled in split chunks, then decoded together in slots [0, 2], equal their one-shot runs', () => {
    const rng = new Rng(4);
    const a = gdnCase(rng, 20); // slot 2: prefill 6 + 11 tokens, then 3 decode steps
    const b = gdnCase(rng, 8); // slot 0: prefill 5 tokens, then 3 decode steps
    let state: OpTensor = randTensor(rng, stateShape(3), 'f32').op; // stale values: every sequence starts from zero
    const outA: number[] = [];
    const outB: number[] = [];
    const step = (parts: [typeof a, number, number, number[]][], slots: number[], hasState: number[]) => {
      const seqStarts = [0];
      for (const [, t0, t1] of parts) seqStarts.push(seqStarts.at(-1)! + t1 - t0);
      const c = concatCases(parts.map(([p, t0, t1]) => sliceCase(p, t0, t1)));
      const r = run('gatedDeltaRule', { ...c.ops, state, ...batchOps({ seqStarts, stateSlots: slots, hasState }) });
      const row = dims.Hv * dims.Dv;
      parts.forEach(([, , , sink], i) => sink.push(...r.out!.subarray(seqStarts[i]! * row, seqStarts[i + 1]! * row)));
      state = { dtype: 'f32', shape: stateShape(3), data: r.state! };
    };
    step([[a, 0, 6, outA], [b, 0, 5, outB]], [2, 0], [0, 0]);
    step([[a, 6, 17, outA]], [2], [1]);
    for (let t = 0; t < 3; t++) step([[b, 5 + t, 6 + t, outB], [a, 17 + t, 18 + t, outA]], [0, 2], [1, 1]);

    const slotSize = dims.Hv * dims.Dk * dims.Dv;
    for (const [c, out, slot] of [[a, outA, 2], [b, outB, 0]] as const) {
      const T = c.inp.g.length / dims.Hv;
      const ref = refGatedDeltaRule(c.inp, dims, new Float64Array(slotSize), { seqStarts: [0, T], stateSlots: [0], hasState: [0] }, 16);
      expectClose(out, ref.out);
      expectClose(state.data.subarray(slot * slotSize, (slot + 1) * slotSize), ref.state);
      // The CPU runs the recurrence token by token: splitting changes no bit.
      const once = run('gatedDeltaRule', { ...c.ops, state: { dtype: 'f32', shape: stateShape(1), data: new Float32Array(slotSize) }, ...batchOps({ seqStarts: [0, T], stateSlots: [0], hasState: [0] }) });
      expect(out).toEqual(Array.from(once.out!));
    }
  });

  it('the delta rule replaces what a key stores (no accumulation), and the gate decays the state', () => {
    const { Hk, Hv, Dk, Dv } = dims;
    const rng = new Rng(5);
    // Two tokens with one key (q = k), beta = 1, g = 0, from zero: the second value replaces the first.
    const kRow = Array.from({ length: Hk * Dk }, () => rng.next());
    const k = f32Case([...kRow, ...kRow], [2, Hk, Dk]);
    const v = randTensor(rng, [2, Hv, Dv], 'f32');
    const one = (n: number, x: number) => f32Case(new Array(n).fill(x), [2, Hv]);
    const zero = f32Case(new Float64Array(Hv * Dk * Dv), stateShape(1));
    const b0 = batchOps({ seqStarts: [0, 2], stateSlots: [0], hasState: [0] });
    const r = run('gatedDeltaRule', { q: k.op, k: k.op, v: v.op, g: one(2 * Hv, 0).op, beta: one(2 * Hv, 1).op, state: zero.op, ...b0 });
    for (let h = 0; h < Hv; h++) {
      const kh = Math.floor(h / (Hv / Hk));
      const ss = kRow.slice(kh * Dk, (kh + 1) * Dk).reduce((s, x) => s + Math.fround(x) ** 2, 0);
      const rr = ss / (ss + 1e-6); // |l2norm(k)|^2, 1 up to the eps
      for (let j = 0; j < Dv; j++) {
        const v1 = v.values[h * Dv + j]!;
        const v2 = v.values[(Hv + h) * Dv + j]!;
        expect(r.out![h * Dv + j]).toBeCloseTo((rr / Math.sqrt(Dk)) * v1, 5);
        expect(r.out![(Hv + h) * Dv + j]).toBeCloseTo((rr / Math.sqrt(Dk)) * (v2 + (1 - rr) * v1), 5);
      }
    }
    // beta = 0: nothing is written; g = ln(1/2) halves the state, g = 0 keeps it bit for bit.
    const state = randTensor(rng, stateShape(1), 'f32');
    const q = randTensor(rng, [2, Hk, Dk], 'f32');
    const b1 = batchOps({ seqStarts: [0, 1, 2], stateSlots: [0, 1], hasState: [1, 1] });
    const two = f32Case([...state.values, ...state.values], stateShape(2));
    const g = f32Case([...new Array(Hv).fill(Math.log(0.5)), ...new Array(Hv).fill(0)], [2, Hv]);
    const d = run('gatedDeltaRule', { q: q.op, k: q.op, v: v.op, g: g.op, beta: one(2 * Hv, 0).op, state: two.op, ...b1 });
    const n = Hv * Dk * Dv;
    expectClose(d.state!.subarray(0, n), state.values.map((x) => x * 0.5), 1e-6);
    expect(Array.from(d.state!.subarray(n))).toEqual(Array.from(state.op.data));
    expectClose(d.out!, refGatedDeltaRule({ q: q.values, k: q.values, v: v.values, g: g.values, beta: new Float64Array(2 * Hv) }, dims, two.values, { seqStarts: [0, 1, 2], stateSlots: [0, 1], hasState: [1, 1] }).out);
  });
});

describe('rmsNormGated (cpu) vs the float64 reference', () => {
  it('rows of D, weight as-is times silu(z); in place too', () => {
    const rng = new Rng(6);
    const x = randTensor(rng, [5, 3, 11], 'f32', 3);
    const z = randTensor(rng, [5, 3, 11], 'f32', 3);
    const w = randTensor(rng, [11], 'bf16');
    const ref = refRmsNormGated(x.values, z.values, w.values, 11, 1e-6);
    const r = run('rmsNormGated', { x: x.op, z: z.op, weight: w.op }, { eps: 1e-6 });
    expectClose(r.out!, ref, 1e-5);
    expect(run('rmsNormGated', { x: x.op, z: z.op, weight: w.op }, { eps: 1e-6, inPlace: 1 }).x).toEqual(r.out);
  });
});

describe('gdnGating (cpu) vs the float64 reference', () => {
  it('g = -exp(A_log) softplus(a + dt_bias) across softplus\'s threshold and deep negatives; beta = sigmoid(b)', () => {
    const rng = new Rng(7);
    const T = 6;
    const Hv = 5;
    // Row 0 pins the edges: a + dt_bias above 20 (the linear branch), just below it, 0, very negative.
    const aVals = [25, 19.5, 0, -40, -3, ...Array.from({ length: (T - 1) * Hv }, () => 30 * rng.next())];
    const a = f32Case(aVals, [T, Hv]);
    const b = f32Case(Array.from({ length: T * Hv }, () => 10 * rng.next()), [T, Hv]);
    const aLog = randTensor(rng, [Hv], 'bf16', 2);
    const dtBias = randTensor(rng, [Hv], 'bf16');
    const r = run('gdnGating', { a: a.op, b: b.op, aLog: aLog.op, dtBias: dtBias.op });
    const ref = refGdnGating(a.values, b.values, aLog.values, dtBias.values);
    expectClose(r.g!, ref.g, 1e-5);
    expectClose(r.beta!, ref.beta, 1e-6);
    // Closed forms: above the threshold softplus is the identity, and g is never positive.
    expect(r.g![0]).toBeCloseTo(-Math.exp(aLog.values[0]!) * (25 + dtBias.values[0]!), 4);
    expect(Array.from(r.g!).every((g) => g <= 0)).toBe(true);
    expect(Array.from(r.beta!).every((x) => x >= 0 && x <= 1)).toBe(true);
  });

  it('f32 weights, and b = 0 gives beta = 1/2', () => {
    const a = f32Case([0.5, -2, 21, 100], [2, 2]);
    const b = f32Case([0, 0, 0, 0], [2, 2]);
    const aLog = f32Case([0, Math.log(0.5)], [2]);
    const dtBias = f32Case([0, 1], [2]);
    const r = run('gdnGating', { a: a.op, b: b.op, aLog: aLog.op, dtBias: dtBias.op });
    expectClose(r.g!, refGdnGating(a.values, b.values, aLog.values, dtBias.values).g, 1e-6);
    expect(Array.from(r.beta!)).toEqual([0.5, 0.5, 0.5, 0.5]);
  });
});

describe('linear-attention shape and batch errors name the op and the argument', () => {
  const rng = new Rng(8);
  const c = gdnCase(rng, 4);
  const state = randTensor(rng, stateShape(2), 'f32').op;
  const b = batchOps({ seqStarts: [0, 1, 4], stateSlots: [1, 0], hasState: [0, 1] });
  const gdn = (over: Record<string, OpTensor>, params: Record<string, number> = {}) => () => run('gatedDeltaRule', { ...c.ops, state, ...b, ...over }, params);
  const conv = (over: Record<string, OpTensor>) => () =>
    run('causalConv1d', { x: randTensor(rng, [4, 6], 'f32').op, weight: randTensor(rng, [6, 4], 'bf16').op, convState: randTensor(rng, [2, 6, 3], 'f32').op, ...b, ...over });

  it.each([
    ['k', { k: randTensor(rng, [4, 2, 11], 'f32').op }, /gatedDeltaRule: k has shape \[4, 2, 11\], expected \[4, 2, 12\]/],
    ['v heads', { v: randTensor(rng, [4, 3, 9], 'f32').op }, /gatedDeltaRule: 3 value heads are not a multiple of 2 key heads/],
    ['g', { g: randTensor(rng, [4, 5], 'f32').op }, /gatedDeltaRule: g has shape \[4, 5\], expected \[4, 4\]/],
    ['beta dtype', { beta: randTensor(rng, [4, 4], 'bf16').op }, /gatedDeltaRule: beta is bf16; the CPU backend runs f32/],
    ['state', { state: randTensor(rng, [2, 4, 12, 8], 'f32').op }, /gatedDeltaRule: state has shape \[2, 4, 12, 8\], expected \[\*, 4, 12, 9\]/],
    ['seqStarts', { seqStarts: intTensor([0, 1, 3]) }, /gatedDeltaRule: seqStarts must run from 0 to the 4 tokens, got 0 \.\. 3/],
    ['a decreasing seqStarts', { seqStarts: intTensor([0, 1, 0, 4]), stateSlots: intTensor([0, 1, 2]), hasState: intTensor([0, 0, 0]), state: randTensor(rng, stateShape(3), 'f32').op }, /gatedDeltaRule: seqStarts decreases at sequence 1/],
    ['a slot out of range', { stateSlots: intTensor([2, 0]) }, /gatedDeltaRule: state slot 2 of sequence 0 is outside the 2 slots/],
    ['a shared slot', { stateSlots: intTensor([0, 0]) }, /gatedDeltaRule: state slot 0 is used by two sequences of one batch/],
    ['hasState', { hasState: intTensor([0, 2]) }, /gatedDeltaRule: hasState of sequence 1 is 2, expected 0 or 1/],
  ] as const)('gatedDeltaRule: %s', (_what, over, message) => {
    expect(gdn(over)).toThrow(message);
  });

  it('gatedDeltaRule: a maxSeqLen below the longest sequence', () => {
    expect(gdn({}, { maxSeqLen: 2 })).toThrow(/gatedDeltaRule: sequence 1 has 3 tokens, more than maxSeqLen 2/);
  });

  it('causalConv1d and rmsNormGated', () => {
    expect(conv({ convState: randTensor(rng, [2, 6, 4], 'f32').op })).toThrow(/causalConv1d: convState has shape \[2, 6, 4\], expected \[\*, 6, 3\]/);
    expect(conv({ weight: randTensor(rng, [5, 4], 'f32').op })).toThrow(/causalConv1d: weight has shape \[5, 4\], expected \[6, \*\]/);
    expect(conv({ stateSlots: intTensor([1, 1]) })).toThrow(/causalConv1d: state slot 1 is used by two sequences of one batch/);
    const x = randTensor(rng, [2, 3, 8], 'f32').op;
    expect(() => run('rmsNormGated', { x, z: randTensor(rng, [2, 3, 7], 'f32').op, weight: randTensor(rng, [8], 'f32').op })).toThrow(/rmsNormGated: z has shape \[2, 3, 7\], expected \[2, 3, 8\]/);
    expect(() => run('rmsNormGated', { x, z: x, weight: randTensor(rng, [7], 'f32').op })).toThrow(/rmsNormGated: weight has shape \[7\], expected \[8\]/);
  });

  it('gdnGating', () => {
    const ab = randTensor(rng, [3, 4], 'f32').op;
    const w = randTensor(rng, [4], 'bf16').op;
    const gate = (over: Record<string, OpTensor>) => () => run('gdnGating', { a: ab, b: ab, aLog: w, dtBias: w, ...over });
    expect(gate({})).not.toThrow();
    expect(gate({ b: randTensor(rng, [3, 5], 'f32').op })).toThrow(/gdnGating: b has shape \[3, 5\], expected \[3, 4\]/);
    expect(gate({ aLog: randTensor(rng, [5], 'f32').op })).toThrow(/gdnGating: aLog has shape \[5\], expected \[4\]/);
    expect(gate({ dtBias: randTensor(rng, [4, 1], 'f32').op })).toThrow(/gdnGating: dtBias has shape \[4, 1\], expected \[4\]/);
    expect(gate({ dtBias: intTensor([1, 2, 3, 4]) })).toThrow(/gdnGating: dtBias is i32, expected f32, bf16 or f16/);
    expect(gate({ a: randTensor(rng, [3, 4], 'bf16').op })).toThrow(/gdnGating: a is bf16; the CPU backend runs f32/);
  });
});
