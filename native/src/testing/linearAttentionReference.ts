/**
 * Float64 references of the linear-attention ops (core/backend.h, "linear attention"),
 * written from Hugging Face's Qwen3-Next Gated DeltaNet (modeling_qwen3_next.py):
 * torch_causal_conv1d_update (conv over state ++ inputs), torch_recurrent_gated_delta_rule,
 * torch_chunk_gated_delta_rule (a second, independent evaluation of the same recurrence:
 * linearAttentionReference.test.ts checks the two agree), Qwen3NextRMSNormGated and the
 * gates of Qwen3NextGatedDeltaNet.forward (g and beta from the a / b projections).
 * Tensors are flat, row-major and token-major like the native ops'.
 */

/** Which tokens form which sequence, and its state slot (core/linear-attention-ops.h). */
export interface LinearBatch {
  /** S + 1 token offsets: sequence s owns tokens [seqStarts[s], seqStarts[s + 1]). */
  seqStarts: number[];
  /** Row of the state tensors of each sequence. */
  stateSlots: number[];
  /** 1 = continue from the slot's state, 0 = start from zeros. */
  hasState: number[];
}

/** Heads and head dims of a gated delta rule: v-head h reads q/k head h / (Hv / Hk). */
export interface GdnDims {
  Hk: number;
  Hv: number;
  Dk: number;
  Dv: number;
}

/** Inputs of the gated delta rule: q, k [T, Hk, Dk]; v [T, Hv, Dv]; g (log decay), beta [T, Hv]. */
export interface GdnInputs {
  q: Float64Array;
  k: Float64Array;
  v: Float64Array;
  g: Float64Array;
  beta: Float64Array;
}

const silu = (x: number): number => x / (1 + Math.exp(-x));

/**
 * SiLU(depthwise causal conv) per sequence. x: [T, C]; weight: [C, W];
 * convState: [numSlots, C, W - 1]. Returns out [T, C] and the new convState (a copy).
 */
export function refCausalConv1d(x: Float64Array, weight: Float64Array, convState: Float64Array, C: number, W: number, batch: LinearBatch): { out: Float64Array; convState: Float64Array } {
  const T = x.length / C;
  const ctx = W - 1;
  const out = new Float64Array(T * C);
  const state = convState.slice();
  batch.stateSlots.forEach((slot, s) => {
    const t0 = batch.seqStarts[s]!;
    const L = batch.seqStarts[s + 1]! - t0;
    for (let c = 0; c < C; c++) {
      // HF: e = cat(conv_state, inputs); conv over e; keep the last L outputs; state = e[-ctx:].
      const e: number[] = [];
      for (let j = 0; j < ctx; j++) e.push(batch.hasState[s] ? state[(slot * C + c) * ctx + j]! : 0);
      for (let t = 0; t < L; t++) e.push(x[(t0 + t) * C + c]!);
      for (let t = 0; t < L; t++) {
        let acc = 0;
        for (let j = 0; j < W; j++) acc += weight[c * W + j]! * e[t + j]!;
        out[(t0 + t) * C + c] = silu(acc);
      }
      for (let j = 0; j < ctx; j++) state[(slot * C + c) * ctx + j] = e[e.length - ctx + j]!;
    }
  });
  return { out, convState: state };
}

/** x / sqrt(sum x^2 + 1e-6) * scale (HF's l2norm, eps inside the root). */
function l2norm(x: Float64Array, scale: number): Float64Array {
  let ss = 0;
  for (const v of x) ss += v * v;
  const inv = scale / Math.sqrt(ss + 1e-6);
  return x.map((v) => v * inv);
}

/** One (sequence, v-head) of the rule: normed q (scaled) and k, v, g, beta per token. */
interface HeadSeq {
  q: Float64Array[];
  k: Float64Array[];
  v: Float64Array[];
  g: number[];
  beta: number[];
}

function headSeq(inp: GdnInputs, d: GdnDims, t0: number, t1: number, h: number): HeadSeq {
  const kh = Math.floor(h / (d.Hv / d.Hk));
  const r: HeadSeq = { q: [], k: [], v: [], g: [], beta: [] };
  for (let t = t0; t < t1; t++) {
    const qk = (t * d.Hk + kh) * d.Dk;
    r.q.push(l2norm(inp.q.subarray(qk, qk + d.Dk), 1 / Math.sqrt(d.Dk)));
    r.k.push(l2norm(inp.k.subarray(qk, qk + d.Dk), 1));
    r.v.push(inp.v.slice((t * d.Hv + h) * d.Dv, (t * d.Hv + h + 1) * d.Dv));
    r.g.push(inp.g[t * d.Hv + h]!);
    r.beta.push(inp.beta[t * d.Hv + h]!);
  }
  return r;
}

/** HF's torch_recurrent_gated_delta_rule for one head. S: [Dk, Dv] in/out; returns out [L][Dv]. */
export function recurrentHead(x: HeadSeq, S: Float64Array, Dk: number, Dv: number): Float64Array[] {
  return x.q.map((q, t) => {
    const k = x.k[t]!;
    const decay = Math.exp(x.g[t]!);
    for (let i = 0; i < S.length; i++) S[i]! *= decay;
    const delta = new Float64Array(Dv);
    for (let j = 0; j < Dv; j++) {
      let mem = 0;
      for (let i = 0; i < Dk; i++) mem += S[i * Dv + j]! * k[i]!;
      delta[j] = (x.v[t]![j]! - mem) * x.beta[t]!;
    }
    for (let i = 0; i < Dk; i++) for (let j = 0; j < Dv; j++) S[i * Dv + j]! += k[i]! * delta[j]!;
    const o = new Float64Array(Dv);
    for (let i = 0; i < Dk; i++) for (let j = 0; j < Dv; j++) o[j]! += S[i * Dv + j]! * q[i]!;
    return o;
  });
}

const dot = (a: ArrayLike<number>, b: ArrayLike<number>): number => {
  let s = 0;
  for (let i = 0; i < a.length; i++) s += a[i]! * b[i]!;
  return s;
};

/** rows [n][m] of sum_j A[i][j] * B[j] over j < n (A: [n][n], B: [n][m]). */
function matRows(A: number[][], B: Float64Array[]): Float64Array[] {
  return A.map((row) => {
    const o = new Float64Array(B[0]!.length);
    row.forEach((a, j) => {
      if (a !== 0) for (let c = 0; c < o.length; c++) o[c]! += a * B[j]![c]!;
    });
    return o;
  });
}

/**
 * HF's torch_chunk_gated_delta_rule for one head: the sequence zero-padded to whole chunks;
 * inside a chunk the delta rule's triangular system is solved by forward substitution
 * (the WY form), across chunks the state carries the rest. S: [Dk, Dv] in/out.
 */
export function chunkedHead(x: HeadSeq, S: Float64Array, Dk: number, Dv: number, chunkSize: number): Float64Array[] {
  const L = x.q.length;
  const out: Float64Array[] = [];
  for (let c0 = 0; c0 < L; c0 += chunkSize) {
    const n = chunkSize;
    const at = (a: Float64Array[], i: number, width: number): Float64Array => (c0 + i < L ? a[c0 + i]! : new Float64Array(width));
    const q = Array.from({ length: n }, (_, i) => at(x.q, i, Dk));
    const k = Array.from({ length: n }, (_, i) => at(x.k, i, Dk));
    const beta = Array.from({ length: n }, (_, i) => (c0 + i < L ? x.beta[c0 + i]! : 0));
    const gc: number[] = [];
    for (let i = 0; i < n; i++) gc.push((i > 0 ? gc[i - 1]! : 0) + (c0 + i < L ? x.g[c0 + i]! : 0));
    const decay = (i: number, j: number): number => (j <= i ? Math.exp(gc[i]! - gc[j]!) : 0);
    const kBeta = k.map((r, i) => r.map((v) => v * beta[i]!));
    const vBeta = Array.from({ length: n }, (_, i) => at(x.v, i, Dv).map((v) => v * beta[i]!));
    // attn = -(k_beta k^T * decay) strictly below the diagonal, then forward substitution.
    const A = Array.from({ length: n }, (_, i) => Array.from({ length: n }, (_, j) => (j < i ? -dot(kBeta[i]!, k[j]!) * decay(i, j) : 0)));
    for (let i = 1; i < n; i++) {
      const row = A[i]!.slice();
      for (let j = 0; j < i; j++) {
        let s = 0;
        for (let m = 0; m < i; m++) s += row[m]! * A[m]![j]!;
        A[i]![j] = row[j]! + s;
      }
    }
    for (let i = 0; i < n; i++) A[i]![i] = 1;
    const u = matRows(A, vBeta);
    const kCumDecay = matRows(A, kBeta.map((r, i) => r.map((v) => v * Math.exp(gc[i]!))));
    const vNew = u.map((r, i) => {
      const o = r.slice();
      for (let a = 0; a < Dk; a++) for (let b = 0; b < Dv; b++) o[b]! -= kCumDecay[i]![a]! * S[a * Dv + b]!;
      return o;
    });
    for (let i = 0; i < n && c0 + i < L; i++) {
      const o = new Float64Array(Dv);
      const qd = Math.exp(gc[i]!);
      for (let a = 0; a < Dk; a++) for (let b = 0; b < Dv; b++) o[b]! += q[i]![a]! * qd * S[a * Dv + b]!;
      for (let j = 0; j <= i; j++) {
        const w = dot(q[i]!, k[j]!) * decay(i, j);
        for (let b = 0; b < Dv; b++) o[b]! += w * vNew[j]![b]!;
      }
      out.push(o);
    }
    const last = gc[n - 1]!;
    for (let a = 0; a < Dk; a++)
      for (let b = 0; b < Dv; b++) {
        let s = S[a * Dv + b]! * Math.exp(last);
        for (let i = 0; i < n; i++) s += k[i]![a]! * Math.exp(last - gc[i]!) * vNew[i]![b]!;
        S[a * Dv + b] = s;
      }
  }
  return out;
}

/**
 * The gated delta rule over a batch. state: [numSlots, Hv, Dk, Dv]. chunkSize: evaluate
 * with HF's chunked algorithm (else the recurrence). Returns out [T, Hv, Dv] and the new
 * state (a copy).
 */
export function refGatedDeltaRule(inp: GdnInputs, d: GdnDims, state: Float64Array, batch: LinearBatch, chunkSize?: number): { out: Float64Array; state: Float64Array } {
  const T = inp.g.length / d.Hv;
  const out = new Float64Array(T * d.Hv * d.Dv);
  const next = state.slice();
  const size = d.Dk * d.Dv;
  batch.stateSlots.forEach((slot, s) => {
    const t0 = batch.seqStarts[s]!;
    for (let h = 0; h < d.Hv; h++) {
      const at = (slot * d.Hv + h) * size;
      const S = batch.hasState[s] ? next.slice(at, at + size) : new Float64Array(size);
      const x = headSeq(inp, d, t0, batch.seqStarts[s + 1]!, h);
      const o = chunkSize === undefined ? recurrentHead(x, S, d.Dk, d.Dv) : chunkedHead(x, S, d.Dk, d.Dv, chunkSize);
      o.forEach((row, i) => out.set(row, ((t0 + i) * d.Hv + h) * d.Dv));
      next.set(S, at);
    }
  });
  return { out, state: next };
}

/** Qwen3NextRMSNormGated: weight * x / sqrt(mean(x^2) + eps) * silu(z), rows of D. */
export function refRmsNormGated(x: Float64Array, z: Float64Array, weight: Float64Array, D: number, eps: number): Float64Array {
  const out = new Float64Array(x.length);
  for (let r = 0; r < x.length / D; r++) {
    let ss = 0;
    for (let i = 0; i < D; i++) ss += x[r * D + i]! ** 2;
    const inv = 1 / Math.sqrt(ss / D + eps);
    for (let i = 0; i < D; i++) out[r * D + i] = weight[i]! * x[r * D + i]! * inv * silu(z[r * D + i]!);
  }
  return out;
}

/** torch's softplus (beta 1, threshold 20): x itself above the threshold. */
export const softplus = (x: number): number => (x > 20 ? x : Math.log1p(Math.exp(x)));

/**
 * The delta rule's gates: g = -exp(A_log) * softplus(a + dt_bias), beta = sigmoid(b).
 * a, b: [T, Hv]; aLog, dtBias: [Hv]. Returns g and beta, [T, Hv].
 */
export function refGdnGating(a: Float64Array, b: Float64Array, aLog: Float64Array, dtBias: Float64Array): { g: Float64Array; beta: Float64Array } {
  const Hv = aLog.length;
  const g = a.map((x, i) => -Math.exp(aLog[i % Hv]!) * softplus(x + dtBias[i % Hv]!));
  const beta = b.map((x) => 1 / (1 + Math.exp(-x)));
  return { g, beta };
}
