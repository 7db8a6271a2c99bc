/**
 * The float64 reference of one Gated DeltaNet (gdn) attention half, the linear-attention
 * layers of Qwen3-Next and Qwen3.5-MoE, written from transformers' Qwen3NextGatedDeltaNet
 * (modeling_qwen3_next.py) and Qwen3_5MoeGatedDeltaNet (modeling_qwen3_5_moe.py): the input
 * projections in either stored layout (GdnSpec.projLayout), the depthwise causal conv +
 * SiLU over the q|k|v channels, the gates, the gated delta rule from the zero state, the
 * gated RMSNorm per value head and out_proj. One sequence, positions 0..T-1, no cache: the
 * ops themselves are linearAttentionReference.ts's.
 */
import { linear, type Mat } from './engineReference.js';
import { refCausalConv1d, refGatedDeltaRule, refGdnGating, refRmsNormGated, type GdnDims, type LinearBatch } from './linearAttentionReference.js';
import type { GdnSlot, GdnSpec } from '../modelSpec.js';

/** The per-token inputs of the conv and the rule, in HF's order after fix_query_key_value_ordering. */
export interface GdnProjections {
  /** [T, 2 Hk Dk + Hv Dv]: [q all key heads | k all key heads | v all value heads], the conv channels. */
  mixed: Float64Array;
  /** [T, Hv Dv] the output gate. */
  z: Float64Array;
  /** [T, Hv] beta before its sigmoid. */
  b: Float64Array;
  /** [T, Hv] the decay input. */
  a: Float64Array;
}

/**
 * The projections of x [T][H] in HF's channel order. 'split' (Qwen3.5): in_proj_qkv already
 * is [q | k | v]. 'grouped' (Qwen3-Next): in_proj_qkvz rows come per key head h as
 * [q_h Dk | k_h Dk | v of value heads h r..h r+r-1 | z of the same] (r = Hv / Hk) and
 * in_proj_ba per key head as [b of its r value heads | a of the same]; regrouped here.
 */
export function gdnProjections(g: GdnSpec, get: (s: GdnSlot) => Mat, x: readonly Float64Array[]): GdnProjections {
  const { numKeyHeads: Hk, numValueHeads: Hv, keyHeadDim: Dk, valueHeadDim: Dv } = g;
  const K = Hk * Dk;
  const V = Hv * Dv;
  const C = 2 * K + V;
  const T = x.length;
  const out: GdnProjections = { mixed: new Float64Array(T * C), z: new Float64Array(T * V), b: new Float64Array(T * Hv), a: new Float64Array(T * Hv) };
  x.forEach((row, t) => {
    if (g.projLayout === 'split') {
      out.mixed.set(linear(row, get('attn.in_proj_qkv')), t * C);
      out.z.set(linear(row, get('attn.in_proj_z')), t * V);
      out.b.set(linear(row, get('attn.in_proj_b')), t * Hv);
      out.a.set(linear(row, get('attn.in_proj_a')), t * Hv);
      return;
    }
    const r = Hv / Hk;
    const qkvz = linear(row, get('attn.in_proj_qkvz'));
    const ba = linear(row, get('attn.in_proj_ba'));
    const group = 2 * Dk + 2 * r * Dv;
    for (let h = 0; h < Hk; h++) {
      const at = h * group;
      const mixed = t * C;
      out.mixed.set(qkvz.subarray(at, at + Dk), mixed + h * Dk);
      out.mixed.set(qkvz.subarray(at + Dk, at + 2 * Dk), mixed + K + h * Dk);
      // The r value heads of key head h are value heads h r .. h r + r - 1 (repeat_interleave).
      out.mixed.set(qkvz.subarray(at + 2 * Dk, at + 2 * Dk + r * Dv), mixed + 2 * K + h * r * Dv);
      out.z.set(qkvz.subarray(at + 2 * Dk + r * Dv, at + group), t * V + h * r * Dv);
      out.b.set(ba.subarray(h * 2 * r, h * 2 * r + r), t * Hv + h * r);
      out.a.set(ba.subarray(h * 2 * r + r, (h + 1) * 2 * r), t * Hv + h * r);
    }
  });
  return out;
}

/**
 * out_proj outputs [T][H] of a gdn layer over x [T][H] (input-normed), from the zero state.
 * get: the layer's weights by slot, as stored (the gated norm weight is used as is, not
 * 1 + weight; conv1d is [C, 1, W]). eps: the model's rms_norm_eps (the gated norm's).
 */
export function gdnAttention(g: GdnSpec, get: (s: GdnSlot) => Mat, x: readonly Float64Array[], eps: number): Float64Array[] {
  const { numKeyHeads: Hk, numValueHeads: Hv, keyHeadDim: Dk, valueHeadDim: Dv, convKernel: W } = g;
  const K = Hk * Dk;
  const V = Hv * Dv;
  const C = 2 * K + V;
  const T = x.length;
  const p = gdnProjections(g, get, x);
  const one: LinearBatch = { seqStarts: [0, T], stateSlots: [0], hasState: [0] };
  const conv = refCausalConv1d(p.mixed, get('attn.conv1d').data, new Float64Array(C * (W - 1)), C, W, one).out;
  const q = new Float64Array(T * K);
  const k = new Float64Array(T * K);
  const v = new Float64Array(T * V);
  for (let t = 0; t < T; t++) {
    q.set(conv.subarray(t * C, t * C + K), t * K);
    k.set(conv.subarray(t * C + K, t * C + 2 * K), t * K);
    v.set(conv.subarray(t * C + 2 * K, (t + 1) * C), t * V);
  }
  const { g: decay, beta } = refGdnGating(p.a, p.b, get('attn.a_log').data, get('attn.dt_bias').data);
  const dims: GdnDims = { Hk, Hv, Dk, Dv };
  const core = refGatedDeltaRule({ q, k, v, g: decay, beta }, dims, new Float64Array(Hv * Dk * Dv), one).out;
  const normed = refRmsNormGated(core, p.z, get('attn.gated_norm').data, Dv, eps);
  return x.map((_, t) => linear(normed.subarray(t * V, (t + 1) * V), get('attn.out_proj')));
}
