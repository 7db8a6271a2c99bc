import { rm } from 'node:fs/promises';
import { afterAll, describe, expect, it } from 'vitest';
import { Rng } from './engineOps.js';
import type { Mat } from './engineReference.js';
import { gdnAttention } from './gdnLayerReference.js';
import { qwen3NextLogitsOf, specSlotWeights, type SlotWeights } from './engineReferenceQwen3Next.js';
import { roleSpec, writeTinyModel } from './engineTesting.js';
import type { GdnSlot, GdnSpec, ModelConfigSpec } from '../modelSpec.js';

// The gdn layer of the float64 reference checked two ways: against a hand computation of
// two tokens written from the grouped row indices directly, and the whole model in the
// grouped layout (Qwen3-Next) against the same weights regathered into the split layout
// (Qwen3.5), which a wrong row ordering of in_proj_qkvz / in_proj_ba would break.

const dirs: string[] = [];
afterAll(async () => Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true }))));

const maxAbsDiff = (a: ArrayLike<number>, b: ArrayLike<number>): number => {
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i]! - b[i]!));
  return m;
};
const silu = (x: number): number => x / (1 + Math.exp(-x));
const sigmoid = (x: number): number => 1 / (1 + Math.exp(-x));

/** Split-layout rows (in_proj_qkv, _z, _b, _a) as row indices into the grouped in_proj_qkvz / in_proj_ba. */
function groupedRowOf(g: GdnSpec): Record<'qkv' | 'z' | 'b' | 'a', (i: number) => number> {
  const { numKeyHeads: Hk, numValueHeads: Hv, keyHeadDim: Dk, valueHeadDim: Dv } = g;
  const r = Hv / Hk;
  const K = Hk * Dk;
  const group = 2 * Dk + 2 * r * Dv;
  // Value channel j (of Hv Dv) belongs to value head vh = j / Dv, served by key head vh / r.
  const valueRow = (j: number, zOff: number): number => {
    const vh = Math.floor(j / Dv);
    return Math.floor(vh / r) * group + 2 * Dk + zOff + (vh % r) * Dv + (j % Dv);
  };
  return {
    qkv: (i) => (i < 2 * K ? Math.floor((i % K) / Dk) * group + (i < K ? 0 : Dk) + (i % Dk) : valueRow(i - 2 * K, 0)),
    z: (j) => valueRow(j, r * Dv),
    b: (vh) => Math.floor(vh / r) * 2 * r + (vh % r),
    a: (vh) => Math.floor(vh / r) * 2 * r + r + (vh % r),
  };
}

function gatherRows(m: Mat, n: number, rowOf: (i: number) => number): Mat {
  const data = new Float64Array(n * m.cols);
  for (let i = 0; i < n; i++) data.set(m.data.subarray(rowOf(i) * m.cols, (rowOf(i) + 1) * m.cols), i * m.cols);
  return { rows: n, cols: m.cols, data };
}

/** The grouped model's weights as the split layout stores them, rows found by `rowOf`. */
function asSplit(c: ModelConfigSpec, grouped: SlotWeights, rowOf: ReturnType<typeof groupedRowOf>): SlotWeights {
  const g = c.gdn!;
  const V = g.numValueHeads * g.valueHeadDim;
  const C = 2 * g.numKeyHeads * g.keyHeadDim + V;
  return (slot, layer, expert) => {
    if (slot === 'attn.in_proj_qkv') return gatherRows(grouped('attn.in_proj_qkvz', layer), C, rowOf.qkv);
    if (slot === 'attn.in_proj_z') return gatherRows(grouped('attn.in_proj_qkvz', layer), V, rowOf.z);
    if (slot === 'attn.in_proj_b') return gatherRows(grouped('attn.in_proj_ba', layer), g.numValueHeads, rowOf.b);
    if (slot === 'attn.in_proj_a') return gatherRows(grouped('attn.in_proj_ba', layer), g.numValueHeads, rowOf.a);
    if (slot === 'attn.in_proj_qkvz' || slot === 'attn.in_proj_ba') throw new Error(`split layout has no ${slot}`);
    return grouped(slot, layer, expert);
  };
}

describe('gdn layer float64 reference', () => {
  it('two tokens of a grouped-layout layer equal a hand computation from the grouped rows', () => {
    const g: GdnSpec = { numKeyHeads: 2, numValueHeads: 4, keyHeadDim: 3, valueHeadDim: 2, convKernel: 3, projLayout: 'grouped' };
    const { numKeyHeads: Hk, numValueHeads: Hv, keyHeadDim: Dk, valueHeadDim: Dv, convKernel: W } = g;
    const H = 5;
    const r = Hv / Hk;
    const K = Hk * Dk;
    const C = 2 * K + Hv * Dv;
    const eps = 1e-6;
    const rng = new Rng(7);
    const mat = (rows: number, cols: number, f = (u: number) => u): Mat => ({ rows, cols, data: Float64Array.from({ length: rows * cols }, () => f(rng.next())) });
    const w: Record<GdnSlot, Mat> = {
      'attn.in_proj_qkvz': mat(2 * K + 2 * Hv * Dv, H),
      'attn.in_proj_ba': mat(2 * Hv, H),
      'attn.conv1d': mat(C, W),
      'attn.dt_bias': mat(1, Hv),
      'attn.a_log': mat(1, Hv, (u) => u * 0.5),
      'attn.gated_norm': mat(1, Dv, (u) => 1 + 0.5 * u),
      'attn.out_proj': mat(H, Hv * Dv),
      'attn.in_proj_qkv': mat(0, 0),
      'attn.in_proj_z': mat(0, 0),
      'attn.in_proj_b': mat(0, 0),
      'attn.in_proj_a': mat(0, 0),
    };
    const x = [mat(1, H).data, mat(1, H).data];
    const got = gdnAttention(g, (s) => w[s], x, eps);

    const dot = (a: ArrayLike<number>, b: ArrayLike<number>): number => Array.from(a).reduce((s, v, i) => s + v * b[i]!, 0);
    const proj = (m: Mat, row: number, t: number): number => dot(m.data.subarray(row * H, (row + 1) * H), x[t]!);
    const group = 2 * Dk + 2 * r * Dv;
    // Conv channel c of token t (HF's conv over [0 .. 0, x_0, x_1]: tap W-1 on the current token).
    const raw = (c: number, t: number): number => {
      if (c < 2 * K) return proj(w['attn.in_proj_qkvz'], Math.floor((c % K) / Dk) * group + (c < K ? 0 : Dk) + (c % Dk), t);
      const vh = Math.floor((c - 2 * K) / Dv);
      return proj(w['attn.in_proj_qkvz'], Math.floor(vh / r) * group + 2 * Dk + (vh % r) * Dv + ((c - 2 * K) % Dv), t);
    };
    const conv = (c: number, t: number): number => {
      const tap = (j: number): number => w['attn.conv1d'].data[c * W + j]!;
      return silu(tap(W - 1) * raw(c, t) + (t === 1 ? tap(W - 2) * raw(c, 0) : 0));
    };
    const unit = (v: number[]): number[] => {
      const n = Math.sqrt(dot(v, v) + 1e-6);
      return v.map((e) => e / n);
    };
    const expected = [0, 1].map(() => new Float64Array(H));
    for (let vh = 0; vh < Hv; vh++) {
      const kh = Math.floor(vh / r);
      const q = [0, 1].map((t) => unit(Array.from({ length: Dk }, (_, i) => conv(kh * Dk + i, t))).map((e) => e / Math.sqrt(Dk)));
      const k = [0, 1].map((t) => unit(Array.from({ length: Dk }, (_, i) => conv(K + kh * Dk + i, t))));
      const v = [0, 1].map((t) => Array.from({ length: Dv }, (_, j) => conv(2 * K + vh * Dv + j, t)));
      const ba = (t: number, second: number): number => proj(w['attn.in_proj_ba'], kh * 2 * r + second * r + (vh % r), t);
      const beta = [0, 1].map((t) => sigmoid(ba(t, 0)));
      const decay = [0, 1].map((t) => Math.exp(-Math.exp(w['attn.a_log'].data[vh]!) * Math.log1p(Math.exp(ba(t, 1) + w['attn.dt_bias'].data[vh]!))));
      // Token 0 from the zero state: S = k0 (beta0 v0)^T. Token 1: S *= decay1; S += k1 (beta1 (v1 - S^T k1))^T.
      const S = k[0]!.map((ki) => v[0]!.map((vj) => ki * beta[0]! * vj));
      const outs = [v[0]!.map((_, j) => dot(q[0]!, S.map((row) => row[j]!)))];
      for (const row of S) for (let j = 0; j < Dv; j++) row[j]! *= decay[1]!;
      const mem = v[1]!.map((_, j) => dot(k[1]!, S.map((row) => row[j]!)));
      S.forEach((row, i) => row.forEach((_, j) => (row[j]! += k[1]![i]! * beta[1]! * (v[1]![j]! - mem[j]!))));
      outs.push(v[1]!.map((_, j) => dot(q[1]!, S.map((row) => row[j]!))));
      outs.forEach((o, t) => {
        const rms = Math.sqrt(dot(o, o) / Dv + eps);
        const zRow = (j: number): number => kh * group + 2 * Dk + r * Dv + (vh % r) * Dv + j;
        o.forEach((oj, j) => {
          const y = (w['attn.gated_norm'].data[j]! * oj) / rms * silu(proj(w['attn.in_proj_qkvz'], zRow(j), t));
          for (let h = 0; h < H; h++) expected[t]![h]! += w['attn.out_proj'].data[h * Hv * Dv + vh * Dv + j]! * y;
        });
      });
    }
    for (let t = 0; t < 2; t++) {
      expect(maxAbsDiff(got[t]!, expected[t]!)).toBeLessThan(1e-12);
      expect(expected[t]!.some((e) => Math.abs(e) > 1e-3)).toBe(true);
    }
  });

  it('a grouped-layout model (Qwen3-Next) gives the logits of its weights regathered into the split layout (Qwen3.5)', async () => {
    const dir = await writeTinyModel('qwen3_next', 11);
    dirs.push(dir);
    const spec = await roleSpec(dir, 'colocated');
    const c = spec.config;
    expect(c.gdn!.projLayout).toBe('grouped');
    expect(c.gdn!.numValueHeads / c.gdn!.numKeyHeads).toBeGreaterThan(1);
    expect(c.layers.filter((k) => k.attention === 'gdn').length).toBeGreaterThan(0);
    const grouped = specSlotWeights(spec);
    const split: ModelConfigSpec = { ...c, gdn: { ...c.gdn!, projLayout: 'split' } };
    const tokens = [3, 17, 5, 9, 1, 30, 12, 8];
    const ref = qwen3NextLogitsOf(c, grouped, tokens);
    const same = qwen3NextLogitsOf(split, asSplit(c, grouped, groupedRowOf(c.gdn!)), tokens);
    for (let t = 0; t < tokens.length; t++) expect(maxAbsDiff(same[t]!, ref[t]!)).toBeLessThan(1e-12);
    // The check has teeth: reading the grouped rows as if they were [q | k | v | z] and [b | a] changes the logits.
    const naive = { qkv: (i: number) => i, z: (j: number) => 2 * c.gdn!.numKeyHeads * c.gdn!.keyHeadDim + c.gdn!.numValueHeads * c.gdn!.valueHeadDim + j, b: (h: number) => h, a: (h: number) => c.gdn!.numValueHeads + h };
    const wrong = qwen3NextLogitsOf(split, asSplit(c, grouped, naive), tokens);
    expect(maxAbsDiff(wrong.at(-1)!, ref.at(-1)!)).toBeGreaterThan(1e-4);
  });
});
