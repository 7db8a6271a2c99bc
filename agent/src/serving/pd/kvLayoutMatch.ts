/**
 * Whether KV exported by one engine can be written into another, and the conversion on the
 * way: the same model gives the same layers, tensors and row elements; block size must
 * match (blocks move whole); the element type may differ (a CPU prefill rank keeps f32, a
 * CUDA decode rank bf16): rows are converted element by element (bf16 by rounding to
 * nearest even, as the engines round).
 */
import type { KvLayout } from '../engineLike.js';

const BYTES: Record<KvLayout['dtype'], number> = { f32: 4, bf16: 2, f16: 2 };

/** Converts a payload of `from`'s layout into `to`'s; the identity when they match. */
export type KvConverter = (data: Uint8Array) => Uint8Array;

/** The converter from a sender's layout to ours, or throws naming the difference. */
export function kvConverter(from: KvLayout, to: KvLayout): KvConverter {
  const problems: string[] = [];
  if (from.blockSize !== to.blockSize) problems.push(`block size ${from.blockSize} vs ${to.blockSize} tokens (give every rank the same --block-size)`);
  if (from.numKvLayers !== to.numKvLayers) problems.push(`${from.numKvLayers} vs ${to.numKvLayers} layers with a KV cache`);
  if (from.tensorsPerLayer !== to.tensorsPerLayer) problems.push(`${from.tensorsPerLayer} vs ${to.tensorsPerLayer} cached tensors per layer (K+V vs an MLA latent row)`);
  const fromElems = from.rowBytes / BYTES[from.dtype];
  const toElems = to.rowBytes / BYTES[to.dtype];
  if (fromElems !== toElems) problems.push(`${fromElems} vs ${toElems} elements per cached row`);
  if (from.stateBytes !== to.stateBytes) problems.push(`${from.stateBytes} vs ${to.stateBytes} bytes of recurrent state per sequence`);
  if (problems.length > 0) throw new Error(`the prefill rank's KV layout does not match this rank's: ${problems.join('; ')} (both must serve the same model)`);
  if (from.dtype === to.dtype) return (d) => d;
  const read = reader(from.dtype);
  const write = writer(to.dtype);
  return (data) => {
    const n = data.byteLength / BYTES[from.dtype];
    if (!Number.isInteger(n)) throw new Error(`KV payload of ${data.byteLength} bytes is not a whole number of ${from.dtype} elements`);
    const src = new DataView(data.buffer, data.byteOffset, data.byteLength);
    const out = new Uint8Array(n * BYTES[to.dtype]);
    const dst = new DataView(out.buffer);
    for (let i = 0; i < n; i++) write(dst, i, read(src, i));
    return out;
  };
}

type Read = (v: DataView, i: number) => number;
type Write = (v: DataView, i: number, x: number) => void;

const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);

function reader(dtype: KvLayout['dtype']): Read {
  if (dtype === 'f32') return (v, i) => v.getFloat32(i * 4, true);
  if (dtype === 'bf16') {
    return (v, i) => {
      u32[0] = v.getUint16(i * 2, true) << 16;
      return f32[0]!;
    };
  }
  return (v, i) => halfToFloat(v.getUint16(i * 2, true));
}

function writer(dtype: KvLayout['dtype']): Write {
  if (dtype === 'f32') return (v, i, x) => v.setFloat32(i * 4, x, true);
  if (dtype === 'bf16') return (v, i, x) => v.setUint16(i * 2, floatToBf16(x), true);
  return (v, i, x) => v.setUint16(i * 2, floatToHalf(x), true);
}

/** f32 -> bf16 bits, rounding to nearest even (NaN kept a quiet NaN). */
export function floatToBf16(x: number): number {
  f32[0] = x;
  const bits = u32[0]!;
  if ((bits & 0x7f800000) === 0x7f800000 && (bits & 0x7fffff) !== 0) return ((bits >>> 16) | 0x40) & 0xffff;
  return ((bits + 0x7fff + ((bits >>> 16) & 1)) >>> 16) & 0xffff;
}

function halfToFloat(h: number): number {
  const sign = h & 0x8000 ? -1 : 1;
  const exp = (h >>> 10) & 0x1f;
  const frac = h & 0x3ff;
  if (exp === 0) return sign * frac * 2 ** -24;
  if (exp === 31) return frac ? NaN : sign * Infinity;
  return sign * (1 + frac / 1024) * 2 ** (exp - 15);
}

function floatToHalf(x: number): number {
  f32[0] = x;
  const bits = u32[0]!;
  const sign = (bits >>> 16) & 0x8000;
  const exp = ((bits >>> 23) & 0xff) - 127 + 15;
  let mant = bits & 0x7fffff;
  if (((bits >>> 23) & 0xff) === 0xff) return sign | 0x7c00 | (mant ? 0x200 : 0);
  if (exp >= 31) return sign | 0x7c00;
  if (exp <= 0) {
    if (exp < -10) return sign;
    mant |= 0x800000;
    const shift = 14 - exp;
    const half = mant >>> shift;
    const rest = mant & ((1 << shift) - 1);
    const mid = 1 << (shift - 1);
    return sign | (half + (rest > mid || (rest === mid && half & 1) ? 1 : 0));
  }
  const half = (exp << 10) | (mant >>> 13);
  const rest = mant & 0x1fff;
  return sign | (half + (rest > 0x1000 || (rest === 0x1000 && half & 1) ? 1 : 0));
}
