/**
 * The DeepSeek-V2/V3 parts of the float64 reference (engineReference.ts), written from
 * transformers' DeepseekV2/V3 modeling code: MLA in its expanded form (per head K and V
 * from kv_b_proj, as transformers computes it, no absorption and no latent cache) and the
 * grouped router with shared experts.
 */
import { attend, invFreq, linear, mlp, rmsNorm, rope, ropeScale, type Mat } from './engineReference.js';
import type { MlaSpec, ModelConfigSpec, MoeRoutingSpec } from '../modelSpec.js';

/** transformers' DeepseekV2/V3RMSNorm(rank) of q_a / kv_a keeps its default eps. */
const loraNormEps = 1e-6;

/** o_proj outputs [T][H] of MLA attention over the tokens x (normed hidden states, positions 0..T-1). */
export function mlaReference(c: ModelConfigSpec, m: MlaSpec, get: (n: string) => Mat, p: string, x: readonly Float64Array[]): Float64Array[] {
  const nH = c.numHeads;
  const { qkNopeHeadDim: N, qkRopeHeadDim: R, kvLoraRank: L, vHeadDim: V } = m;
  const Dq = N + R;
  const inv = invFreq(c, R);
  const a = (n: string): Mat => get(`${p}self_attn.${n}`);
  const qs: Float64Array[] = [];
  const ks: Float64Array[] = [];
  const vs: Float64Array[] = [];
  for (let t = 0; t < x.length; t++) {
    const q = m.qLoraRank === 0 ? linear(x[t]!, a('q_proj.weight')) : linear(rmsNorm(linear(x[t]!, a('q_a_proj.weight')), a('q_a_layernorm.weight'), loraNormEps), a('q_b_proj.weight'));
    const kvA = linear(x[t]!, a('kv_a_proj_with_mqa.weight'));
    const kpe = kvA.slice(L, L + R);
    rope(kpe, 0, R, t, inv, ropeScale(c), m.ropeInterleave);
    const kvB = linear(rmsNorm(kvA, a('kv_a_layernorm.weight'), loraNormEps, 0, L), a('kv_b_proj.weight'));
    const k = new Float64Array(nH * Dq);
    const v = new Float64Array(nH * V);
    for (let h = 0; h < nH; h++) {
      rope(q, h * Dq + N, R, t, inv, ropeScale(c), m.ropeInterleave);
      k.set(kvB.subarray(h * (N + V), h * (N + V) + N), h * Dq);
      k.set(kpe, h * Dq + N);
      v.set(kvB.subarray(h * (N + V) + N, (h + 1) * (N + V)), h * V);
    }
    qs.push(q);
    ks.push(k);
    vs.push(v);
  }
  return x.map((_, t) => {
    const attn = new Float64Array(nH * V);
    for (let h = 0; h < nH; h++) {
      const scores: number[] = [];
      for (let s = 0; s <= t; s++) {
        let d = 0;
        for (let i = 0; i < Dq; i++) d += qs[t]![h * Dq + i]! * ks[s]![h * Dq + i]!;
        scores.push(d * m.softmaxScale);
      }
      attend(scores, vs, h * V, V, attn, h * V);
    }
    return linear(attn, a('o_proj.weight'));
  });
}

/** Indices of the `k` largest values (ties: lower index). */
function topK(v: readonly number[], k: number): number[] {
  return v
    .map((s, i) => [s, i] as const)
    .sort((x, y) => y[0] - x[0] || x[1] - y[1])
    .slice(0, k)
    .map(([, i]) => i);
}

/** The experts a token chooses and their weights, as transformers' V2 / V3 routers do. */
export function deepseekRoute(c: ModelConfigSpec, r: MoeRoutingSpec, logits: Float64Array, bias?: Mat): { ids: number[]; weights: number[] } {
  const E = c.numExperts;
  let scores: number[];
  if (r.scoringFunc === 'sigmoid') scores = Array.from(logits, (l) => 1 / (1 + Math.exp(-l)));
  else {
    const mx = Math.max(...logits);
    const e = Array.from(logits, (l) => Math.exp(l - mx));
    const sum = e.reduce((x, y) => x + y, 0);
    scores = e.map((v) => v / sum);
  }
  let choice = scores.map((s, i) => s + (r.topkMethod === 'noaux_tc' && bias ? bias.data[i]! : 0));
  if (r.topkMethod !== 'greedy') {
    const per = E / r.nGroup;
    const groupScore = Array.from({ length: r.nGroup }, (_, g) => {
      if (r.topkMethod === 'group_limited_greedy') return Math.max(...scores.slice(g * per, (g + 1) * per));
      const top2 = [...choice.slice(g * per, (g + 1) * per)].sort((x, y) => y - x);
      return top2[0]! + top2[1]!;
    });
    const kept = new Set(topK(groupScore, r.topkGroup));
    choice = choice.map((v, i) => (kept.has(Math.floor(i / per)) ? v : -Infinity));
  }
  const ids = topK(choice, c.numExpertsPerTok);
  let weights = ids.map((i) => scores[i]!);
  if (c.normTopkProb) {
    const sum = weights.reduce((x, y) => x + y, 0) + 1e-20;
    weights = weights.map((w) => w / sum);
  }
  return { ids, weights: weights.map((w) => w * r.routedScalingFactor) };
}

/** The FFN half of a DeepSeek MoE layer: routed experts plus the shared experts. */
export function deepseekMoeReference(c: ModelConfigSpec, r: MoeRoutingSpec, get: (n: string) => Mat, p: string, x: Float64Array): Float64Array {
  const logits = linear(x, get(`${p}mlp.gate.weight`));
  const { ids, weights } = deepseekRoute(c, r, logits, r.scoreCorrectionBias ? get(`${p}mlp.gate.e_score_correction_bias`) : undefined);
  const f = new Float64Array(c.hiddenSize);
  ids.forEach((e, j) => {
    const ep = `${p}mlp.experts.${e}.`;
    const y = mlp(x, get(`${ep}gate_proj.weight`), get(`${ep}up_proj.weight`), get(`${ep}down_proj.weight`));
    for (let i = 0; i < c.hiddenSize; i++) f[i]! += weights[j]! * y[i]!;
  });
  if (r.numSharedExperts > 0) {
    const sp = `${p}mlp.shared_experts.`;
    const y = mlp(x, get(`${sp}gate_proj.weight`), get(`${sp}up_proj.weight`), get(`${sp}down_proj.weight`));
    for (let i = 0; i < c.hiddenSize; i++) f[i]! += y[i]!;
  }
  return f;
}
