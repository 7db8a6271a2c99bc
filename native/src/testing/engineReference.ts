/**
 * A straightforward float64 forward pass of the supported architectures, written from
 * the HuggingFace modeling code's definition (no KV cache, no batching, no threads;
 * DeepSeek's MLA and routing in engineReferenceDeepseek.ts, MLA in its expanded form).
 * Tests compare the native engine against it; it is far too slow for anything else.
 */
import { openSync, readSync, closeSync } from 'node:fs';
import { deepseekMoeReference, mlaReference } from './engineReferenceDeepseek.js';
import type { ModelConfigSpec, ModelLoadSpec } from '../modelSpec.js';

/** A weight as float64, row-major. */
export type Mat = { rows: number; cols: number; data: Float64Array };

function f16ToNumber(h: number): number {
  const s = h & 0x8000 ? -1 : 1;
  const e = (h >> 10) & 0x1f;
  const m = h & 0x3ff;
  if (e === 0) return s * m * 2 ** -24;
  if (e === 31) return m ? NaN : s * Infinity;
  return s * (1 + m / 1024) * 2 ** (e - 15);
}

/** Reads every tensor of a load spec into float64 arrays. */
export function readSpecWeights(spec: ModelLoadSpec): Map<string, Mat> {
  const out = new Map<string, Mat>();
  const fds = spec.files.map((f) => openSync(f, 'r'));
  try {
    for (const t of spec.tensors) {
      const buf = Buffer.alloc(t.byteLength);
      readSync(fds[t.file]!, buf, 0, t.byteLength, t.offset);
      const n = t.shape.reduce((a, b) => a * b, 1);
      const data = new Float64Array(n);
      for (let i = 0; i < n; i++) {
        if (t.dtype === 'f32') data[i] = buf.readFloatLE(i * 4);
        else if (t.dtype === 'bf16') {
          const u = new Uint32Array([buf.readUInt16LE(i * 2) << 16]);
          data[i] = new Float32Array(u.buffer)[0]!;
        } else data[i] = f16ToNumber(buf.readUInt16LE(i * 2));
      }
      const rows = t.shape.length === 1 ? 1 : t.shape[0]!;
      out.set(t.name, { rows, cols: n / rows, data });
    }
  } finally {
    for (const fd of fds) closeSync(fd);
  }
  return out;
}

export function linear(x: Float64Array, w: Mat, bias?: Mat): Float64Array {
  const y = new Float64Array(w.rows);
  for (let r = 0; r < w.rows; r++) {
    let s = bias ? bias.data[r]! : 0;
    const off = r * w.cols;
    for (let c = 0; c < w.cols; c++) s += x[c]! * w.data[off + c]!;
    y[r] = s;
  }
  return y;
}

export function rmsNorm(x: Float64Array, w: Mat, eps: number, off = 0, n = x.length - off): Float64Array {
  let ss = 0;
  for (let i = 0; i < n; i++) ss += x[off + i]! ** 2;
  const inv = 1 / Math.sqrt(ss / n + eps);
  const y = new Float64Array(n);
  for (let i = 0; i < n; i++) y[i] = w.data[i]! * x[off + i]! * inv;
  return y;
}

const silu = (v: number): number => v / (1 + Math.exp(-v));

export function mlp(x: Float64Array, gate: Mat, up: Mat, down: Mat): Float64Array {
  const g = linear(x, gate);
  const u = linear(x, up);
  for (let i = 0; i < g.length; i++) g[i] = silu(g[i]!) * u[i]!;
  return linear(g, down);
}

/** RoPE inverse frequencies over `dim` (default, or yarn as transformers computes it). */
export function invFreq(c: ModelConfigSpec, dim = c.headDim): Float64Array {
  const half = dim / 2;
  const f = new Float64Array(half);
  const s = c.ropeScaling;
  for (let i = 0; i < half; i++) f[i] = 1 / c.ropeTheta ** ((2 * i) / dim);
  if (s.type === 'default') return f;
  if (s.type !== 'yarn') throw new Error(`reference: rope type ${s.type} is not covered`);
  // transformers _compute_yarn_parameters (truncate: floor / ceil of the correction range).
  const corr = (rot: number): number => (dim * Math.log(s.originalMaxPositionEmbeddings / (rot * 2 * Math.PI))) / (2 * Math.log(c.ropeTheta));
  const low = Math.max(Math.floor(corr(s.betaFast)), 0);
  let high = Math.min(Math.ceil(corr(s.betaSlow)), dim - 1);
  if (low === high) high += 0.001;
  for (let i = 0; i < half; i++) {
    const extrapolation = 1 - Math.min(Math.max((i - low) / (high - low), 0), 1);
    f[i] = (f[i]! / s.factor) * (1 - extrapolation) + f[i]! * extrapolation;
  }
  return f;
}

/** cos/sin multiplier of the rope (yarn attention factor; 1 otherwise). */
export function ropeScale(c: ModelConfigSpec): number {
  return c.ropeScaling.type === 'yarn' ? c.ropeScaling.attentionFactor : 1;
}

/** In place: RoPE of x[off, off + d) at pos; pairs (i, i + d/2), or (2i, 2i + 1) when interleaved. */
export function rope(x: Float64Array, off: number, d: number, pos: number, inv: Float64Array, scale = 1, interleaved = false): void {
  const half = d / 2;
  for (let i = 0; i < half; i++) {
    const a = pos * inv[i]!;
    const [i1, i2] = interleaved ? [off + 2 * i, off + 2 * i + 1] : [off + i, off + i + half];
    const x1 = x[i1]!;
    const x2 = x[i2]!;
    x[i1] = (x1 * Math.cos(a) - x2 * Math.sin(a)) * scale;
    x[i2] = (x2 * Math.cos(a) + x1 * Math.sin(a)) * scale;
  }
}

/** softmax(scores) . values: sum_s p_s * values[s] over rows of width n at offset off. */
export function attend(scores: number[], values: readonly Float64Array[], off: number, n: number, out: Float64Array, outOff: number): void {
  const mx = Math.max(...scores);
  const e = scores.map((v) => Math.exp(v - mx));
  const sum = e.reduce((a, b) => a + b, 0);
  for (let s = 0; s < scores.length; s++) for (let i = 0; i < n; i++) out[outOff + i]! += (e[s]! / sum) * values[s]![off + i]!;
}

/** o_proj outputs [T][H] of GQA attention (q/k/v, optional q/k norm and bias). */
function gqaReference(c: ModelConfigSpec, get: (n: string) => Mat, w: Map<string, Mat>, p: string, x: readonly Float64Array[]): Float64Array[] {
  const D = c.headDim;
  const inv = invFreq(c);
  const bias = (n: string): Mat | undefined => (c.attentionBias ? w.get(`${p}self_attn.${n}_proj.bias`) : undefined);
  const qs: Float64Array[] = [];
  const ks: Float64Array[] = [];
  const vs: Float64Array[] = [];
  for (let t = 0; t < x.length; t++) {
    const q = linear(x[t]!, get(`${p}self_attn.q_proj.weight`), bias('q'));
    const k = linear(x[t]!, get(`${p}self_attn.k_proj.weight`), bias('k'));
    const v = linear(x[t]!, get(`${p}self_attn.v_proj.weight`), bias('v'));
    for (let hh = 0; hh < c.numHeads; hh++) {
      if (c.qkNorm) q.set(rmsNorm(q, get(`${p}self_attn.q_norm.weight`), c.rmsNormEps, hh * D, D), hh * D);
      rope(q, hh * D, D, t, inv, ropeScale(c));
    }
    for (let hh = 0; hh < c.numKvHeads; hh++) {
      if (c.qkNorm) k.set(rmsNorm(k, get(`${p}self_attn.k_norm.weight`), c.rmsNormEps, hh * D, D), hh * D);
      rope(k, hh * D, D, t, inv, ropeScale(c));
    }
    qs.push(q);
    ks.push(k);
    vs.push(v);
  }
  const group = c.numHeads / c.numKvHeads;
  return x.map((_, t) => {
    const attn = new Float64Array(c.numHeads * D);
    for (let hh = 0; hh < c.numHeads; hh++) {
      const kvh = Math.floor(hh / group);
      const scores: number[] = [];
      for (let s = 0; s <= t; s++) {
        let d = 0;
        for (let i = 0; i < D; i++) d += qs[t]![hh * D + i]! * ks[s]![kvh * D + i]!;
        scores.push(d / Math.sqrt(D));
      }
      attend(scores, vs, kvh * D, D, attn, hh * D);
    }
    return linear(attn, get(`${p}self_attn.o_proj.weight`), c.attentionBias ? w.get(`${p}self_attn.o_proj.bias`) : undefined);
  });
}

/** The FFN half of a softmax top-k MoE layer (Qwen3-MoE, Mixtral). */
function softmaxMoeReference(c: ModelConfigSpec, get: (n: string) => Mat, p: string, x: Float64Array): Float64Array {
  const mix = c.arch === 'mixtral';
  const logits = linear(x, get(mix ? `${p}block_sparse_moe.gate.weight` : `${p}mlp.gate.weight`));
  const mx = Math.max(...logits);
  const pr = Array.from(logits, (v) => Math.exp(v - mx));
  const sum = pr.reduce((a, b) => a + b, 0);
  const order = pr.map((v, i) => [v / sum, i] as const).sort((a, b) => b[0] - a[0] || a[1] - b[1]);
  const top = order.slice(0, c.numExpertsPerTok);
  const kept = top.reduce((a, b) => a + b[0], 0);
  const f = new Float64Array(c.hiddenSize);
  for (const [prob, e] of top) {
    const wgt = c.normTopkProb || mix ? prob / kept : prob;
    const ep = mix ? `${p}block_sparse_moe.experts.${e}.` : `${p}mlp.experts.${e}.`;
    const y = mix
      ? mlp(x, get(`${ep}w1.weight`), get(`${ep}w3.weight`), get(`${ep}w2.weight`))
      : mlp(x, get(`${ep}gate_proj.weight`), get(`${ep}up_proj.weight`), get(`${ep}down_proj.weight`));
    for (let i = 0; i < c.hiddenSize; i++) f[i]! += wgt * y[i]!;
  }
  return f;
}

/** Logits [T][V] of every position of `tokens` (a full causal forward). */
export function referenceLogits(config: ModelConfigSpec, w: Map<string, Mat>, tokens: readonly number[]): Float64Array[] {
  const c = config;
  const get = (name: string): Mat => {
    const m = w.get(name);
    if (!m) throw new Error(`reference: tensor ${name} missing`);
    return m;
  };
  const H = c.hiddenSize;
  const embed = get('model.embed_tokens.weight');
  let h: Float64Array[] = tokens.map((id) => embed.data.slice(id * H, (id + 1) * H));
  for (let L = 0; L < c.numLayers; L++) {
    const p = `model.layers.${L}.`;
    const x = h.map((v) => rmsNorm(v, get(`${p}input_layernorm.weight`), c.rmsNormEps));
    const kinds = c.layers[L]!;
    const o = kinds.attention === 'mla' ? mlaReference(c, c.mla!, get, p, x) : gqaReference(c, get, w, p, x);
    h = h.map((v, t) => {
      const res = v.map((r, i) => r + o[t]![i]!);
      const y = rmsNorm(res, get(`${p}post_attention_layernorm.weight`), c.rmsNormEps);
      let f: Float64Array;
      if (kinds.ffn === 'dense') f = mlp(y, get(`${p}mlp.gate_proj.weight`), get(`${p}mlp.up_proj.weight`), get(`${p}mlp.down_proj.weight`));
      else if (c.routing) f = deepseekMoeReference(c, c.routing, get, p, y);
      else f = softmaxMoeReference(c, get, p, y);
      return res.map((r, i) => r + f[i]!);
    });
  }
  const head = w.get('lm_head.weight') ?? embed;
  return h.map((x) => linear(rmsNorm(x, get('model.norm.weight'), c.rmsNormEps), head));
}

/** Norm-wise relative error ||a - b|| / ||b||. */
export function relErr(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let num = 0;
  let den = 0;
  for (let i = 0; i < b.length; i++) {
    num += (a[i]! - b[i]!) ** 2;
    den += b[i]! ** 2;
  }
  return Math.sqrt(num / Math.max(den, 1e-300));
}
