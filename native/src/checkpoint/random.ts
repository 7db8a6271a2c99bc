/**
 * Deterministic random init for synthetic checkpoints: a seeded xoshiro128** generator per
 * tensor (seeded from the model seed and the tensor name, so a tensor's values do not
 * depend on which shard or in which order it is written), Box-Muller normals, and
 * round-to-nearest-even conversion to bf16.
 */

/** 32-bit FNV-1a hash of a string. */
export function hashName(name: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < name.length; i++) {
    h ^= name.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h >>> 0;
}

/** xoshiro128** with a splitmix32-expanded seed. Deterministic across platforms. */
export class Xoshiro128 {
  private s0: number;
  private s1: number;
  private s2: number;
  private s3: number;

  constructor(seed: number, stream = 0) {
    let x = (seed ^ Math.imul(stream ^ 0x9e3779b9, 0x85ebca6b)) >>> 0;
    const next = (): number => {
      x = (x + 0x9e3779b9) >>> 0;
      let z = x;
      z = Math.imul(z ^ (z >>> 16), 0x85ebca6b) >>> 0;
      z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35) >>> 0;
      return (z ^ (z >>> 16)) >>> 0;
    };
    this.s0 = next();
    this.s1 = next();
    this.s2 = next();
    this.s3 = next();
    if ((this.s0 | this.s1 | this.s2 | this.s3) === 0) this.s0 = 1;
  }

  /** Next 32-bit unsigned integer. */
  nextU32(): number {
    const result = Math.imul(rotl(Math.imul(this.s1, 5) >>> 0, 7), 9) >>> 0;
    const t = (this.s1 << 9) >>> 0;
    this.s2 ^= this.s0;
    this.s3 ^= this.s1;
    this.s1 ^= this.s2;
    this.s0 ^= this.s3;
    this.s2 ^= t;
    this.s3 = rotl(this.s3, 11);
    this.s0 >>>= 0;
    this.s1 >>>= 0;
    this.s2 >>>= 0;
    return result;
  }

  /** Uniform in (0, 1): never 0, so log() is safe. */
  nextUniform(): number {
    return (this.nextU32() + 0.5) / 4294967296;
  }
}

function rotl(x: number, k: number): number {
  return ((x << k) | (x >>> (32 - k))) >>> 0;
}

const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);

/** Round a number to bf16 (round to nearest, ties to even) and return its 16 bits. */
export function toBf16Bits(x: number): number {
  f32[0] = x;
  const bits = u32[0]!;
  if ((bits & 0x7f800000) === 0x7f800000 && (bits & 0x7fffff) !== 0) return 0x7fc0; // NaN
  return ((bits + 0x7fff + ((bits >>> 16) & 1)) >>> 16) & 0xffff;
}

/** The float value of bf16 bits. */
export function fromBf16Bits(bits: number): number {
  u32[0] = (bits & 0xffff) << 16;
  return f32[0]!;
}

/** How a tensor is initialised: mean + std * N(0, 1). */
export interface NormalInit {
  mean: number;
  std: number;
}

/**
 * bf16 bytes of a tensor of `count` elements drawn from mean + std * N(0,1), using a
 * generator seeded from (seed, name). Little-endian, as safetensors requires.
 */
export function normalBf16(seed: number, name: string, count: number, init: NormalInit): Uint8Array {
  const rng = new Xoshiro128(seed >>> 0, hashName(name));
  // Draw into float32 first, then round the whole buffer: two tight loops beat a call per element.
  const values = new Float32Array(count + (count % 2));
  for (let i = 0; i < count; i += 2) {
    // Box-Muller: two independent normals per pair of uniforms.
    const r = init.std * Math.sqrt(-2 * Math.log(rng.nextUniform()));
    const theta = 2 * Math.PI * rng.nextUniform();
    values[i] = init.mean + r * Math.cos(theta);
    values[i + 1] = init.mean + r * Math.sin(theta);
  }
  const bits = new Uint32Array(values.buffer);
  const out = new Uint16Array(count);
  for (let i = 0; i < count; i++) {
    const b = bits[i]!;
    out[i] = (b + 0x7fff + ((b >>> 16) & 1)) >>> 16; // finite values only: no NaN handling needed
  }
  return new Uint8Array(out.buffer, out.byteOffset, out.byteLength);
}
