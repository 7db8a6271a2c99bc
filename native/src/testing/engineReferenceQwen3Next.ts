/**
 * The Qwen3-Next / Qwen3.5-MoE parts of the float64 reference (engineReference.ts),
 * written from transformers' modeling_qwen3_next.py: Qwen3NextRMSNorm scaling by
 * (1 + weight), the gated attention (q_proj yields per head [query | gate]; the attention
 * output times sigmoid(gate) before o_proj), partial RoPE (rotate-half over the first
 * rotaryDim dims of each head), the Gated DeltaNet layers (gdnLayerReference.ts), and the
 * sparse MoE block plus shared_expert(x) * sigmoid(shared_expert_gate(x)).
 *
 * Weights are looked up by slot (the load spec's bindings), not by checkpoint name, so
 * per-expert and fused expert checkpoints (Qwen3.5-MoE's gate_up_proj) read the same.
 */
import { attend, invFreq, linear, mlp, readSpecWeights, rmsNorm, rope, ropeScale, type Mat } from './engineReference.js';
import { gdnAttention } from './gdnLayerReference.js';
import type { LayerSlot, ModelConfigSpec, ModelLoadSpec, TensorSlot } from '../modelSpec.js';

const sigmoid = (v: number): number => 1 / (1 + Math.exp(-v));

/** A slot's weight: get(slot) for the model, get(slot, layer[, expert]) for a layer's. */
export type SlotWeights = (slot: TensorSlot, layer?: number, expert?: number) => Mat;

/** The stored weights of a load spec by slot (norms as stored: see withUnitOffset). */
export function specSlotWeights(spec: ModelLoadSpec): SlotWeights {
  const byName = readSpecWeights(spec);
  const key = (slot: string, layer?: number, expert?: number): string => `${slot}/${layer ?? -1}/${expert ?? -1}`;
  const bySlot = new Map<string, Mat>();
  for (const t of spec.tensors) bySlot.set(key(t.slot, t.layer, t.expert), byName.get(t.name)!);
  return (slot, layer, expert) => {
    const m = bySlot.get(key(slot, layer, expert));
    if (!m) throw new Error(`reference: slot ${key(slot, layer, expert)} missing`);
    return m;
  };
}

/** The weights the forward pass multiplies by: (1 + weight) for every norm HF builds from Qwen3NextRMSNorm. */
function withUnitOffset(c: ModelConfigSpec, stored: SlotWeights): SlotWeights {
  // Not attn.gated_norm: Qwen3NextRMSNormGated multiplies by its plain weight.
  const unitOffset = new Set<TensorSlot>(['input_norm', 'post_attention_norm', 'final_norm', 'attn.q_norm', 'attn.k_norm']);
  return (slot, layer, expert) => {
    const m = stored(slot, layer, expert);
    if (!c.normUnitOffset || !unitOffset.has(slot)) return m;
    return { ...m, data: m.data.map((v) => 1 + v) };
  };
}

/** o_proj outputs [T][H] of gqa / gqa_gated attention over x (normed, positions 0..T-1). */
function gatedAttention(c: ModelConfigSpec, get: (s: LayerSlot) => Mat, gated: boolean, x: readonly Float64Array[]): Float64Array[] {
  const D = c.headDim;
  const R = c.rotaryDim;
  const inv = invFreq(c, R);
  const qs: Float64Array[] = [];
  const gates: Float64Array[] = [];
  const ks: Float64Array[] = [];
  const vs: Float64Array[] = [];
  for (let t = 0; t < x.length; t++) {
    const proj = linear(x[t]!, get('attn.q_proj'));
    // gqa_gated: torch.chunk(q_proj(x).view(..., heads, 2 D), 2, dim=-1): per head [query | gate].
    const q = new Float64Array(c.numHeads * D);
    const gate = new Float64Array(c.numHeads * D);
    for (let h = 0; h < c.numHeads; h++) {
      const at = gated ? 2 * h * D : h * D;
      q.set(proj.subarray(at, at + D), h * D);
      if (gated) gate.set(proj.subarray(at + D, at + 2 * D), h * D);
    }
    const k = linear(x[t]!, get('attn.k_proj'));
    const v = linear(x[t]!, get('attn.v_proj'));
    const heads = (y: Float64Array, n: number, norm: LayerSlot): void => {
      for (let h = 0; h < n; h++) {
        if (c.qkNorm) y.set(rmsNorm(y, get(norm), c.rmsNormEps, h * D, D), h * D);
        rope(y, h * D, R, t, inv, ropeScale(c));
      }
    };
    heads(q, c.numHeads, 'attn.q_norm');
    heads(k, c.numKvHeads, 'attn.k_norm');
    qs.push(q);
    gates.push(gate);
    ks.push(k);
    vs.push(v);
  }
  const group = c.numHeads / c.numKvHeads;
  return x.map((_, t) => {
    const attn = new Float64Array(c.numHeads * D);
    for (let h = 0; h < c.numHeads; h++) {
      const kvh = Math.floor(h / group);
      const scores: number[] = [];
      for (let s = 0; s <= t; s++) {
        let d = 0;
        for (let i = 0; i < D; i++) d += qs[t]![h * D + i]! * ks[s]![kvh * D + i]!;
        scores.push(d / Math.sqrt(D));
      }
      attend(scores, vs, kvh * D, D, attn, h * D);
    }
    if (gated) for (let i = 0; i < attn.length; i++) attn[i]! *= sigmoid(gates[t]![i]!);
    return linear(attn, get('attn.o_proj'));
  });
}

/** The FFN half of a moe / moe+gated_shared layer: softmax top-k experts (+ the gated shared expert). */
function gatedSharedMoe(c: ModelConfigSpec, w: SlotWeights, L: number, x: Float64Array): Float64Array {
  const logits = linear(x, w('ffn.router', L));
  const mx = Math.max(...logits);
  const e = Array.from(logits, (v) => Math.exp(v - mx));
  const sum = e.reduce((a, b) => a + b, 0);
  const top = e
    .map((v, i) => [v / sum, i] as const)
    .sort((a, b) => b[0] - a[0] || a[1] - b[1])
    .slice(0, c.numExpertsPerTok);
  const kept = top.reduce((a, b) => a + b[0], 0);
  const f = new Float64Array(c.hiddenSize);
  for (const [p, ex] of top) {
    const y = mlp(x, w('ffn.experts.gate_proj', L, ex), w('ffn.experts.up_proj', L, ex), w('ffn.experts.down_proj', L, ex));
    const weight = c.normTopkProb ? p / kept : p;
    for (let i = 0; i < f.length; i++) f[i]! += weight * y[i]!;
  }
  if (c.layers[L]!.ffn === 'moe+gated_shared') {
    const y = mlp(x, w('ffn.shared.gate_proj', L), w('ffn.shared.up_proj', L), w('ffn.shared.down_proj', L));
    const s = sigmoid(linear(x, w('ffn.shared_expert_gate', L))[0]!);
    for (let i = 0; i < f.length; i++) f[i]! += s * y[i]!;
  }
  return f;
}

/** Logits [T][V] of every position of `tokens` for a colocated load spec of a Qwen3-Next-like model. */
export function qwen3NextReferenceLogits(spec: ModelLoadSpec, tokens: readonly number[]): Float64Array[] {
  return qwen3NextLogitsOf(spec.config, specSlotWeights(spec), tokens);
}

/** qwen3NextReferenceLogits from a config and its stored weights by slot (tests build these directly). */
export function qwen3NextLogitsOf(c: ModelConfigSpec, stored: SlotWeights, tokens: readonly number[]): Float64Array[] {
  const w = withUnitOffset(c, stored);
  const H = c.hiddenSize;
  const embed = w('embed');
  let h: Float64Array[] = tokens.map((id) => embed.data.slice(id * H, (id + 1) * H));
  for (let L = 0; L < c.numLayers; L++) {
    const kinds = c.layers[L]!;
    const x = h.map((v) => rmsNorm(v, w('input_norm', L), c.rmsNormEps));
    let o: Float64Array[];
    if (kinds.attention === 'gdn') {
      if (!c.gdn) throw new Error('reference: a gdn layer needs config.gdn');
      o = gdnAttention(c.gdn, (s) => w(s, L), x, c.rmsNormEps);
    } else if (kinds.attention === 'gqa' || kinds.attention === 'gqa_gated') o = gatedAttention(c, (s) => w(s, L), kinds.attention === 'gqa_gated', x);
    else throw new Error(`reference: attention kind ${kinds.attention} is not covered`);
    h = h.map((v, t) => {
      const res = v.map((r, i) => r + o[t]![i]!);
      const y = rmsNorm(res, w('post_attention_norm', L), c.rmsNormEps);
      const f = kinds.ffn === 'dense' ? mlp(y, w('ffn.gate_proj', L), w('ffn.up_proj', L), w('ffn.down_proj', L)) : gatedSharedMoe(c, w, L, y);
      return res.map((r, i) => r + f[i]!);
    });
  }
  const head = c.tieWordEmbeddings ? embed : w('lm_head');
  return h.map((x) => linear(rmsNorm(x, w('final_norm'), c.rmsNormEps), head));
}
