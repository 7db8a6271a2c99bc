/**
 * Op-level cases for the backend conformance suite: random inputs with odd sizes, and a
 * float64 reference for each op (written from the op's definition in core/backend.h).
 * engineOps.test.ts runs every case on every available backend through runOp().
 */
import type { OpTensor } from './testingAddon.js';

/** Deterministic uniform numbers in [-1, 1). */
export class Rng {
  private s: number;
  constructor(seed: number) {
    this.s = seed >>> 0 || 1;
  }
  next(): number {
    // mulberry32
    this.s = (this.s + 0x6d2b79f5) >>> 0;
    let t = this.s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 2 ** 31 - 1;
  }
  int(n: number): number {
    return Math.floor(((this.next() + 1) / 2) * n);
  }
}

const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);
function bf16Bits(x: number): number {
  f32[0] = x;
  const b = u32[0]!;
  return ((b + 0x7fff + ((b >>> 16) & 1)) >>> 16) & 0xffff;
}
function bf16Value(bits: number): number {
  u32[0] = bits << 16;
  return f32[0]!;
}

/** A tensor plus the exact float64 values the backend sees (after bf16 / f32 rounding). */
export interface CaseTensor {
  op: OpTensor;
  values: Float64Array;
}

export function randTensor(rng: Rng, shape: number[], dtype: 'f32' | 'bf16', scale = 1): CaseTensor {
  const n = shape.reduce((a, b) => a * b, 1);
  const values = new Float64Array(n);
  if (dtype === 'bf16') {
    const data = new Uint16Array(n);
    for (let i = 0; i < n; i++) {
      data[i] = bf16Bits(rng.next() * scale);
      values[i] = bf16Value(data[i]!);
    }
    return { op: { dtype, shape, data }, values };
  }
  const data = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    data[i] = rng.next() * scale;
    values[i] = data[i]!;
  }
  return { op: { dtype, shape, data }, values };
}

export function intTensor(values: number[], shape = [values.length]): OpTensor {
  return { dtype: 'i32', shape, data: Int32Array.from(values) };
}

// ---- float64 references -------------------------------------------------------------

export function refMatmul(x: Float64Array, w: Float64Array, T: number, K: number, N: number, bias?: Float64Array): Float64Array {
  const out = new Float64Array(T * N);
  for (let t = 0; t < T; t++)
    for (let n = 0; n < N; n++) {
      let s = bias ? bias[n]! : 0;
      for (let k = 0; k < K; k++) s += x[t * K + k]! * w[n * K + k]!;
      out[t * N + n] = s;
    }
  return out;
}

export function refRmsNorm(x: Float64Array, w: Float64Array, T: number, H: number, eps: number): Float64Array {
  const out = new Float64Array(T * H);
  for (let t = 0; t < T; t++) {
    let ss = 0;
    for (let i = 0; i < H; i++) ss += x[t * H + i]! ** 2;
    const inv = 1 / Math.sqrt(ss / H + eps);
    for (let i = 0; i < H; i++) out[t * H + i] = x[t * H + i]! * inv * w[i]!;
  }
  return out;
}

export function refSiluMlp(x: Float64Array, g: Float64Array, u: Float64Array, d: Float64Array, T: number, H: number, I: number): Float64Array {
  const gx = refMatmul(x, g, T, H, I);
  const ux = refMatmul(x, u, T, H, I);
  for (let i = 0; i < gx.length; i++) gx[i] = (gx[i]! / (1 + Math.exp(-gx[i]!))) * ux[i]!;
  return refMatmul(gx, d, T, I, H);
}

/** Router: softmax, top-k (ties: lower id), optional renormalisation. */
export function refRouter(logits: Float64Array, T: number, E: number, k: number, norm: boolean): { ids: number[]; weights: number[] } {
  const ids: number[] = [];
  const weights: number[] = [];
  for (let t = 0; t < T; t++) {
    const row = Array.from(logits.subarray(t * E, (t + 1) * E));
    const mx = Math.max(...row);
    const e = row.map((v) => Math.exp(v - mx));
    const sum = e.reduce((a, b) => a + b, 0);
    const order = e.map((v, i) => [v / sum, i] as const).sort((a, b) => b[0] - a[0] || a[1] - b[1]).slice(0, k);
    const kept = order.reduce((a, b) => a + b[0], 0);
    for (const [p, i] of order) {
      ids.push(i);
      weights.push(norm ? p / kept : p);
    }
  }
  return { ids, weights };
}

/** The sampling uniform of core/sampling-rng.h (splitmix64 over seed << 32 | position). */
export function samplingUniform(seed: number, position: number): number {
  const M = (1n << 64n) - 1n;
  let z = ((BigInt(seed >>> 0) << 32n) | BigInt(position >>> 0)) & M;
  z = (z + 0x9e3779b97f4a7c15n) & M;
  z = ((z ^ (z >> 30n)) * 0xbf58476d1ce4e5b9n) & M;
  z = ((z ^ (z >> 27n)) * 0x94d049bb133111ebn) & M;
  z ^= z >> 31n;
  return Number(z >> 40n) / 16777216;
}

/** The token choice rule of cpu/sampling.cc, in float64. */
export function refSample(logits: ArrayLike<number>, temperature: number, topK: number, topP: number, seed: number, position: number): number {
  const V = logits.length;
  const l = Array.from(logits);
  if (!(temperature > 0)) return l.indexOf(Math.max(...l));
  const mx = Math.max(...l);
  const p = l.map((v) => Math.exp((v - mx) / temperature));
  const sum = p.reduce((a, b) => a + b, 0);
  for (let i = 0; i < V; i++) p[i] = p[i]! / sum;
  const order = p.map((v, i) => i).sort((a, b) => p[b]! - p[a]! || a - b);
  let n = topK > 0 && topK < V ? topK : V;
  if (topP < 1) {
    let mass = 0;
    for (let i = 0; i < n; i++) {
      mass += p[order[i]!]!;
      if (mass >= topP) {
        n = i + 1;
        break;
      }
    }
  }
  const kept = order.slice(0, Math.max(1, n)).sort((a, b) => a - b);
  const mass = kept.reduce((a, i) => a + p[i]!, 0);
  const target = samplingUniform(seed, position) * mass;
  let run = 0;
  for (const i of kept) {
    run += p[i]!;
    if (run > target) return i;
  }
  return kept.at(-1)!;
}
