import { describe, expect, it } from 'vitest';
import { relErr } from './testing/engineReference.js';
import { Rng, intTensor, randTensor, refMatmul, refRmsNorm, refRouter, refSample, refSiluMlp, samplingUniform } from './testing/engineOps.js';
import { loadTestingAddon, type OpBackend, type OpTensor } from './testing/testingAddon.js';

const addon = loadTestingAddon();
const probe = addon.probe();
const backends: OpBackend[] = [{ name: 'cpu', threads: 2 }];
if (probe.backends.includes('cuda') && probe.devices.length > 0) backends.push({ name: 'cuda', deviceIndex: 0 });
const TOL = 1e-5;

describe.each(backends.map((b) => [b.name, b] as const))('backend ops vs float64 reference: %s', (_name, backend) => {
  const run = (op: string, inputs: Record<string, OpTensor>, params: Record<string, number | boolean> = {}) => addon.runOp(backend, op, inputs, params);

  it.each([
    [1, 'bf16'],
    [3, 'bf16'],
    [5, 'f32'],
    [9, 'bf16'],
  ] as const)('matmul with %i rows and %s weights (odd K and N, bias)', (T, dtype) => {
    const rng = new Rng(T * 17);
    const K = 37;
    const N = 29;
    const x = randTensor(rng, [T, K], 'f32');
    const w = randTensor(rng, [N, K], dtype);
    const b = randTensor(rng, [N], 'f32');
    const out = run('matmul', { x: x.op, w: w.op, bias: b.op }).out!;
    expect(relErr(out, refMatmul(x.values, w.values, T, K, N, b.values))).toBeLessThan(TOL);
  });

  it('add: elementwise, and a dtype mismatch is refused naming the tensor', () => {
    const rng = new Rng(11);
    const a = randTensor(rng, [3, 7], 'f32');
    const b = randTensor(rng, [3, 7], 'f32');
    const out = run('add', { a: a.op, b: b.op }).out!;
    expect(Array.from(out)).toEqual(Array.from(a.values, (v, i) => Math.fround(v + b.values[i]!)));
    expect(() => run('add', { a: a.op, b: randTensor(rng, [3, 7], 'bf16').op })).toThrow(/add: b is bf16, expected f32/);
  });

  it('matmul rows are batch invariant (bitwise)', () => {
    const rng = new Rng(3);
    const x = randTensor(rng, [7, 41], 'f32');
    const w = randTensor(rng, [13, 41], 'bf16');
    const all = run('matmul', { x: x.op, w: w.op }).out!;
    for (let t = 0; t < 7; t++) {
      const one = run('matmul', { x: { dtype: 'f32', shape: [1, 41], data: (x.op.data as Float32Array).slice(t * 41, (t + 1) * 41) }, w: w.op }).out!;
      expect(one).toEqual(all.slice(t * 13, (t + 1) * 13));
    }
  });

  it('embedding, rmsNorm and addRmsNorm', () => {
    const rng = new Rng(5);
    const table = randTensor(rng, [37, 19], 'bf16');
    const emb = run('embedding', { ids: intTensor([3, 0, 36, 3, 11]), table: table.op }).out!;
    expect(Array.from(emb.slice(2 * 19, 3 * 19))).toEqual(Array.from(table.values.slice(36 * 19, 37 * 19)));
    const x = randTensor(rng, [5, 37], 'f32', 3);
    const w = randTensor(rng, [37], 'bf16');
    expect(relErr(run('rmsNorm', { x: x.op, weight: w.op }, { eps: 1e-5 }).out!, refRmsNorm(x.values, w.values, 5, 37, 1e-5))).toBeLessThan(TOL);
    const d = randTensor(rng, [5, 37], 'f32');
    const r = run('addRmsNorm', { delta: d.op, residual: x.op, weight: w.op }, { eps: 1e-6 });
    const sum = x.values.map((v, i) => v + d.values[i]!);
    expect(relErr(r.residual!, sum)).toBeLessThan(1e-7);
    expect(relErr(r.out!, refRmsNorm(sum, w.values, 5, 37, 1e-6))).toBeLessThan(TOL);
    expect(() => run('rmsNorm', { x: x.op, weight: randTensor(rng, [36], 'f32').op })).toThrow(/rmsNorm: weight has shape \[36\], expected \[37\]/);
  });

  it('qkNormRope: per-head norm then rotate-half RoPE at arbitrary positions', () => {
    const rng = new Rng(7);
    const T = 4;
    const nH = 6;
    const nKv = 2;
    const D = 10;
    const q = randTensor(rng, [T, nH, D], 'f32');
    const k = randTensor(rng, [T, nKv, D], 'f32');
    const qn = randTensor(rng, [D], 'bf16');
    const kn = randTensor(rng, [D], 'f32');
    const positions = [0, 7, 300, 4095];
    const inv = Float32Array.from({ length: D / 2 }, (_, i) => 1 / 10000 ** ((2 * i) / D));
    const out = run('qkNormRope', { q: q.op, k: k.op, positions: intTensor(positions), qNorm: qn.op, kNorm: kn.op, invFreq: { dtype: 'f32', shape: [D / 2], data: inv } }, { eps: 1e-6, attentionScale: 1.25 });
    const ref = (x: Float64Array, heads: number, w: Float64Array): Float64Array => {
      const y = new Float64Array(x.length);
      for (let t = 0; t < T; t++)
        for (let h = 0; h < heads; h++) {
          const off = (t * heads + h) * D;
          const n = refRmsNorm(x.subarray(off, off + D), w, 1, D, 1e-6);
          for (let i = 0; i < D / 2; i++) {
            const a = Math.fround(positions[t]! * inv[i]!);
            const c = Math.cos(a) * 1.25;
            const s = Math.sin(a) * 1.25;
            y[off + i] = n[i]! * c - n[i + D / 2]! * s;
            y[off + i + D / 2] = n[i + D / 2]! * c + n[i]! * s;
          }
        }
      return y;
    };
    expect(relErr(out.q!, ref(q.values, nH, qn.values))).toBeLessThan(TOL);
    expect(relErr(out.k!, ref(k.values, nKv, kn.values))).toBeLessThan(TOL);
  });

  it('pagedAttention over scattered blocks (GQA, mixed prefill and decode)', () => {
    const rng = new Rng(11);
    const numBlocks = 11;
    const B = 3;
    const nKv = 2;
    const nH = 6;
    const D = 10;
    const kCache = randTensor(rng, [numBlocks, B, nKv, D], 'f32');
    const vCache = randTensor(rng, [numBlocks, B, nKv, D], 'f32');
    // Sequence 0: 2 new tokens at positions 5, 6 (context 7); sequence 1: 1 token at 0.
    const tables = [
      [9, 2, 6],
      [4, 0, 0],
    ];
    const tokSeq = [0, 0, 1];
    const positions = [5, 6, 0];
    const slot = (s: number, p: number): number => tables[s]![Math.floor(p / B)]! * B + (p % B);
    const T = 3;
    const q = randTensor(rng, [T, nH, D], 'f32');
    const k = randTensor(rng, [T, nKv, D], 'f32');
    const v = randTensor(rng, [T, nKv, D], 'f32');
    const out = run(
      'pagedAttention',
      {
        q: q.op,
        k: k.op,
        v: v.op,
        slotMapping: intTensor(tokSeq.map((s, t) => slot(s, positions[t]!))),
        kCache: kCache.op,
        vCache: vCache.op,
        tokenSeq: intTensor(tokSeq),
        positions: intTensor(positions),
        blockTables: intTensor(tables.flat(), [2, 3]),
      },
      { scale: 1 / Math.sqrt(D) },
    ).out!;
    const kc = kCache.values.slice();
    const vc = vCache.values.slice();
    const row = nKv * D;
    for (let t = 0; t < T; t++) {
      kc.set(k.values.subarray(t * row, (t + 1) * row), slot(tokSeq[t]!, positions[t]!) * row);
      vc.set(v.values.subarray(t * row, (t + 1) * row), slot(tokSeq[t]!, positions[t]!) * row);
    }
    const ref = new Float64Array(T * nH * D);
    for (let t = 0; t < T; t++)
      for (let h = 0; h < nH; h++) {
        const kvh = Math.floor(h / (nH / nKv));
        const sc: number[] = [];
        for (let p = 0; p <= positions[t]!; p++) {
          const off = slot(tokSeq[t]!, p) * row + kvh * D;
          let d = 0;
          for (let i = 0; i < D; i++) d += q.values[(t * nH + h) * D + i]! * kc[off + i]!;
          sc.push(d / Math.sqrt(D));
        }
        const mx = Math.max(...sc);
        const e = sc.map((s) => Math.exp(s - mx));
        const sum = e.reduce((a, b) => a + b, 0);
        for (let p = 0; p <= positions[t]!; p++) {
          const off = slot(tokSeq[t]!, p) * row + kvh * D;
          for (let i = 0; i < D; i++) ref[(t * nH + h) * D + i]! += (e[p]! / sum) * vc[off + i]!;
        }
      }
    expect(relErr(out, ref)).toBeLessThan(TOL);
    expect(() =>
      run('pagedAttention', {
        q: q.op, k: k.op, v: v.op, slotMapping: intTensor([0, 1, 2]), kCache: kCache.op, vCache: vCache.op,
        tokenSeq: intTensor(tokSeq), positions: intTensor(positions), blockTables: intTensor([9, 2, 60, 4, 0, 0], [2, 3]),
      }),
    ).toThrow(/block id 60/);
  });

  it('siluGatedMlp, routerTopK and moeExperts', () => {
    const rng = new Rng(13);
    const T = 5;
    const H = 19;
    const I = 11;
    const E = 6;
    const K = 2;
    const x = randTensor(rng, [T, H], 'f32');
    const g = randTensor(rng, [E, I, H], 'bf16');
    const u = randTensor(rng, [E, I, H], 'bf16');
    const d = randTensor(rng, [E, H, I], 'bf16');
    const one = (t: typeof g, e: number, n: number): OpTensor => ({ ...t.op, shape: t.op.shape.slice(1), data: (t.op.data as Uint16Array).slice(e * n, (e + 1) * n) });
    const mlp = run('siluGatedMlp', { x: x.op, gate: one(g, 2, I * H), up: one(u, 2, I * H), down: one(d, 2, H * I) }).out!;
    const slice = (t: typeof g, e: number, n: number): Float64Array => t.values.subarray(e * n, (e + 1) * n);
    expect(relErr(mlp, refSiluMlp(x.values, slice(g, 2, I * H), slice(u, 2, I * H), slice(d, 2, H * I), T, H, I))).toBeLessThan(TOL);

    const logits = randTensor(rng, [T, E], 'f32', 2);
    for (const norm of [true, false]) {
      const r = run('routerTopK', { logits: logits.op }, { k: K, normTopk: norm });
      const ref = refRouter(logits.values, T, E, K, norm);
      expect(Array.from(r.expertIds!)).toEqual(ref.ids);
      expect(relErr(r.expertWeights!, ref.weights)).toBeLessThan(TOL);
    }
    const route = refRouter(logits.values, T, E, K, true);
    const out = run('moeExperts', { x: x.op, expertIds: intTensor(route.ids, [T, K]), expertWeights: { dtype: 'f32', shape: [T, K], data: Float32Array.from(route.weights) }, gate: g.op, up: u.op, down: d.op }).out!;
    const ref = new Float64Array(T * H);
    for (let t = 0; t < T; t++)
      for (let j = 0; j < K; j++) {
        const e = route.ids[t * K + j]!;
        const y = refSiluMlp(x.values.subarray(t * H, (t + 1) * H), slice(g, e, I * H), slice(u, e, I * H), slice(d, e, H * I), 1, H, I);
        for (let i = 0; i < H; i++) ref[t * H + i]! += Math.fround(route.weights[t * K + j]!) * y[i]!;
      }
    expect(relErr(out, ref)).toBeLessThan(TOL);
  });

  it('sample follows the documented rule exactly (greedy, temperature, top-k, top-p)', () => {
    const rng = new Rng(17);
    const V = 97;
    const S = 40;
    const logits = randTensor(rng, [S, V], 'f32', 3);
    const temperature = Float32Array.from({ length: S }, (_, s) => [0, 0.7, 1, 1.6][s % 4]!);
    const topK = Int32Array.from({ length: S }, (_, s) => [0, 5, 0, 40, 1][s % 5]!);
    const topP = Float32Array.from({ length: S }, (_, s) => [1, 0.9, 0.5, 1, 0.99, 0.05][s % 6]!);
    const seeds = Uint32Array.from({ length: S }, (_, s) => s * 2654435761);
    const pos = Int32Array.from({ length: S }, (_, s) => s * 37);
    const tokens = run('sample', {
      logits: logits.op,
      temperature: { dtype: 'f32', shape: [S], data: temperature },
      topK: { dtype: 'i32', shape: [S], data: topK },
      topP: { dtype: 'f32', shape: [S], data: topP },
      seeds: { dtype: 'i32', shape: [S], data: seeds },
      samplePositions: { dtype: 'i32', shape: [S], data: pos },
    }).tokens!;
    for (let s = 0; s < S; s++) {
      const row = Array.from((logits.op.data as Float32Array).subarray(s * V, (s + 1) * V));
      expect(tokens[s]).toBe(refSample(row, temperature[s]!, topK[s]!, topP[s]!, seeds[s]!, pos[s]!));
    }
    expect(samplingUniform(0, 0)).toBeGreaterThanOrEqual(0);
  });
});
