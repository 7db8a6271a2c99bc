/**
 * A straightforward float64 forward pass of the supported architectures, written from
 * the HuggingFace modeling code's definition (no KV cache, no batching, no threads).
 * Tests compare the native engine against it; it is far too slow for anything else.
 */
import { openSync, readSync, closeSync } from 'node:fs';
import type { ModelConfigSpec, ModelLoadSpec } from './modelSpec.js';

type Mat = { rows: number; cols: number; data: Float64Array };

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

function linear(x: Float64Array, w: Mat, bias?: Mat): Float64Array {
  const y = new Float64Array(w.rows);
  for (let r = 0; r < w.rows; r++) {
    let s = bias ? bias.data[r]! : 0;
    const off = r * w.cols;
    for (let c = 0; c < w.cols; c++) s += x[c]! * w.data[off + c]!;
    y[r] = s;
  }
  return y;
}

function rmsNorm(x: Float64Array, w: Mat, eps: number, off = 0, n = x.length): Float64Array {
  let ss = 0;
  for (let i = 0; i < n; i++) ss += x[off + i]! ** 2;
  const inv = 1 / Math.sqrt(ss / n + eps);
  const y = new Float64Array(n);
  for (let i = 0; i < n; i++) y[i] = w.data[i]! * x[off + i]! * inv;
  return y;
}

const silu = (v: number): number => v / (1 + Math.exp(-v));

function mlp(x: Float64Array, gate: Mat, up: Mat, down: Mat): Float64Array {
  const g = linear(x, gate);
  const u = linear(x, up);
  for (let i = 0; i < g.length; i++) g[i] = silu(g[i]!) * u[i]!;
  return linear(g, down);
}

/** Default RoPE inverse frequencies (the reference covers plain RoPE only). */
function invFreq(c: ModelConfigSpec): Float64Array {
  const half = c.headDim / 2;
  const f = new Float64Array(half);
  for (let i = 0; i < half; i++) f[i] = 1 / c.ropeTheta ** ((2 * i) / c.headDim);
  return f;
}

function rope(x: Float64Array, off: number, d: number, pos: number, inv: Float64Array): void {
  const half = d / 2;
  for (let i = 0; i < half; i++) {
    const a = pos * inv[i]!;
    const x1 = x[off + i]!;
    const x2 = x[off + i + half]!;
    x[off + i] = x1 * Math.cos(a) - x2 * Math.sin(a);
    x[off + i + half] = x2 * Math.cos(a) + x1 * Math.sin(a);
  }
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
  const D = c.headDim;
  const T = tokens.length;
  const inv = invFreq(c);
  const embed = get('model.embed_tokens.weight');
  let h: Float64Array[] = tokens.map((id) => embed.data.slice(id * H, (id + 1) * H));
  for (let L = 0; L < c.numLayers; L++) {
    const p = `model.layers.${L}.`;
    const bias = (n: string): Mat | undefined => (c.attentionBias ? w.get(`${p}self_attn.${n}_proj.bias`) : undefined);
    const qs: Float64Array[] = [];
    const ks: Float64Array[] = [];
    const vs: Float64Array[] = [];
    for (let t = 0; t < T; t++) {
      const x = rmsNorm(h[t]!, get(`${p}input_layernorm.weight`), c.rmsNormEps);
      const q = linear(x, get(`${p}self_attn.q_proj.weight`), bias('q'));
      const k = linear(x, get(`${p}self_attn.k_proj.weight`), bias('k'));
      const v = linear(x, get(`${p}self_attn.v_proj.weight`), bias('v'));
      for (let hh = 0; hh < c.numHeads; hh++) {
        if (c.qkNorm) q.set(rmsNorm(q, get(`${p}self_attn.q_norm.weight`), c.rmsNormEps, hh * D, D), hh * D);
        rope(q, hh * D, D, t, inv);
      }
      for (let hh = 0; hh < c.numKvHeads; hh++) {
        if (c.qkNorm) k.set(rmsNorm(k, get(`${p}self_attn.k_norm.weight`), c.rmsNormEps, hh * D, D), hh * D);
        rope(k, hh * D, D, t, inv);
      }
      qs.push(q);
      ks.push(k);
      vs.push(v);
    }
    const group = c.numHeads / c.numKvHeads;
    const next: Float64Array[] = [];
    for (let t = 0; t < T; t++) {
      const attn = new Float64Array(c.numHeads * D);
      for (let hh = 0; hh < c.numHeads; hh++) {
        const kvh = Math.floor(hh / group);
        const scores: number[] = [];
        for (let s = 0; s <= t; s++) {
          let d = 0;
          for (let i = 0; i < D; i++) d += qs[t]![hh * D + i]! * ks[s]![kvh * D + i]!;
          scores.push(d / Math.sqrt(D));
        }
        const mx = Math.max(...scores);
        const e = scores.map((v) => Math.exp(v - mx));
        const sum = e.reduce((a, b) => a + b, 0);
        for (let s = 0; s <= t; s++) for (let i = 0; i < D; i++) attn[hh * D + i]! += (e[s]! / sum) * vs[s]![kvh * D + i]!;
      }
      const o = linear(attn, get(`${p}self_attn.o_proj.weight`), c.attentionBias ? w.get(`${p}self_attn.o_proj.bias`) : undefined);
      const res = h[t]!.map((v, i) => v + o[i]!);
      const x = rmsNorm(res, get(`${p}post_attention_layernorm.weight`), c.rmsNormEps);
      let f: Float64Array;
      if (!c.moeLayers[L]) {
        f = mlp(x, get(`${p}mlp.gate_proj.weight`), get(`${p}mlp.up_proj.weight`), get(`${p}mlp.down_proj.weight`));
      } else {
        const mix = c.arch === 'mixtral';
        const logits = linear(x, get(mix ? `${p}block_sparse_moe.gate.weight` : `${p}mlp.gate.weight`));
        const mx = Math.max(...logits);
        const pr = Array.from(logits, (v) => Math.exp(v - mx));
        const sum = pr.reduce((a, b) => a + b, 0);
        const order = pr.map((v, i) => [v / sum, i] as const).sort((a, b) => b[0] - a[0] || a[1] - b[1]);
        const top = order.slice(0, c.numExpertsPerTok);
        const kept = top.reduce((a, b) => a + b[0], 0);
        f = new Float64Array(H);
        for (const [prob, e] of top) {
          const wgt = c.normTopkProb || mix ? prob / kept : prob;
          const ep = mix ? `${p}block_sparse_moe.experts.${e}.` : `${p}mlp.experts.${e}.`;
          const y = mix
            ? mlp(x, get(`${ep}w1.weight`), get(`${ep}w3.weight`), get(`${ep}w2.weight`))
            : mlp(x, get(`${ep}gate_proj.weight`), get(`${ep}up_proj.weight`), get(`${ep}down_proj.weight`));
          for (let i = 0; i < H; i++) f[i]! += wgt * y[i]!;
        }
      }
      next.push(res.map((v, i) => v + f[i]!));
    }
    h = next;
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
