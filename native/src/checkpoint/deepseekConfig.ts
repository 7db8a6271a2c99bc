/**
 * The DeepSeek-V2/V3 readers of the family table (families.ts): MLA attention, and MoE
 * layers with grouped routing and shared experts after the first dense ones. Every MLA
 * field must be present (transformers would fill in its own defaults, which describe
 * another model); a bad or missing field is an error that names it. Follows transformers' DeepseekV2/V3Config defaults for the rest and
 * DeepSeek's reference code where transformers simplifies (moe_layer_freq is honoured;
 * the yarn softmax scale applies to V2 as to V3).
 */
import { z } from 'zod';
import type { AttentionKind, FfnKind, MlaSpec, MoeRoutingSpec } from '../modelSpec.js';
import { failConfig, type AttentionFields, type FamilyInput, type FfnFields } from './familyFields.js';
import { yarnMscale, type RopeSettings } from './rope.js';

const posInt = z.int().min(1);

const deepseekSchema = z.looseObject({
  q_lora_rank: posInt.nullable(),
  kv_lora_rank: posInt,
  qk_nope_head_dim: z.int().min(0),
  qk_rope_head_dim: posInt,
  v_head_dim: posInt,
  n_routed_experts: posInt.nullish(),
  n_shared_experts: z.int().min(0).nullish(),
  num_experts_per_tok: posInt.nullish(),
  moe_intermediate_size: posInt.nullish(),
  first_k_dense_replace: z.int().min(0).nullish(),
  moe_layer_freq: posInt.nullish(),
  routed_scaling_factor: z.number().positive().nullish(),
  norm_topk_prob: z.boolean().nullish(),
  topk_method: z.enum(['greedy', 'group_limited_greedy', 'noaux_tc']).nullish(),
  scoring_func: z.enum(['softmax', 'sigmoid']).nullish(),
  n_group: posInt.nullish(),
  topk_group: posInt.nullish(),
  rope_interleave: z.boolean().nullish(),
});

type DeepseekFieldsRaw = z.infer<typeof deepseekSchema>;

/** MLA fields a DeepSeek config must spell out (q_lora_rank may be null). */
const mlaFields = ['q_lora_rank', 'kv_lora_rank', 'qk_nope_head_dim', 'qk_rope_head_dim', 'v_head_dim'] as const;

/** The DeepSeek fields of config.json, every MLA field present first (a missing one is named). */
function readDeepseek(file: string, json: Record<string, unknown>): DeepseekFieldsRaw {
  for (const f of mlaFields) {
    if (!(f in json) || json[f] === undefined) failConfig(file, `${f} is missing: DeepSeek MLA needs ${mlaFields.join(', ')}`, `add ${f} to config.json (q_lora_rank may be null)`);
  }
  if (json['kv_lora_rank'] === 0) failConfig(file, 'kv_lora_rank is 0: MLA needs a positive latent rank', 'use the config that came with the checkpoint');
  const r = deepseekSchema.safeParse(json);
  if (!r.success) failConfig(file, `invalid DeepSeek config: ${r.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ')}`);
  return r.data!;
}

/**
 * mla attention in every layer.
 * @param v3 DeepseekV3ForCausalLM (reads rope_interleave; V2's RoPE is always interleaved).
 */
export function mlaAttention(v3: boolean): (input: FamilyInput) => AttentionFields {
  return ({ file, json, rope, numLayers }) => {
    const d = readDeepseek(file, json);
    if (d.qk_rope_head_dim % 2 !== 0) failConfig(file, `qk_rope_head_dim ${d.qk_rope_head_dim} must be even for RoPE`);
    if (json['attention_bias'] === true) failConfig(file, 'attention_bias is true: MLA projections with biases are not supported', 'set attention_bias to false');
    const mla: MlaSpec = {
      qLoraRank: d.q_lora_rank ?? 0,
      kvLoraRank: d.kv_lora_rank,
      qkNopeHeadDim: d.qk_nope_head_dim,
      qkRopeHeadDim: d.qk_rope_head_dim,
      vHeadDim: d.v_head_dim,
      ropeInterleave: v3 ? (d.rope_interleave ?? true) : true,
      softmaxScale: (d.qk_nope_head_dim + d.qk_rope_head_dim) ** -0.5 * softmaxMscale(rope) ** 2,
    };
    // One latent (and rope key) per token serves every head; RoPE runs over qk_rope_head_dim.
    return { kinds: new Array<AttentionKind>(numLayers).fill('mla'), numKvHeads: 1, headDim: d.qk_rope_head_dim, qkNorm: false, attentionBias: false, mla, rotaryDim: d.qk_rope_head_dim, gdn: null };
  };
}

/**
 * DeepSeek's FFN: dense MLPs in the first first_k_dense_replace layers, then MoE every
 * moe_layer_freq layers (moe+shared with n_shared_experts), routed by MoeRoutingSpec.
 * @param v3 DeepseekV3ForCausalLM (its defaults: sigmoid, noaux_tc, renormalised, x 2.5, 3 dense layers).
 */
export function deepseekFfn(v3: boolean): (input: FamilyInput) => FfnFields {
  return ({ file, json, numLayers }) => {
    const d = readDeepseek(file, json);
    const numExperts = d.n_routed_experts ?? 0;
    const normTopkProb = d.norm_topk_prob ?? v3;
    if (numExperts === 0) {
      return { kinds: new Array<FfnKind>(numLayers).fill('dense'), numExperts: 0, numExpertsPerTok: 0, moeIntermediateSize: 0, normTopkProb, routing: null, gatedSharedExpert: null };
    }
    const k = d.num_experts_per_tok ?? failConfig(file, 'num_experts_per_tok is missing: a DeepSeek MoE config needs it');
    if (k > numExperts) failConfig(file, `num_experts_per_tok ${k} exceeds the ${numExperts} routed experts (n_routed_experts)`);
    const moeIntermediateSize = d.moe_intermediate_size ?? failConfig(file, 'moe_intermediate_size is missing: a DeepSeek MoE config needs it');
    const routing = routingOf(file, d, numExperts, k, moeIntermediateSize, v3);
    const first = d.first_k_dense_replace ?? (v3 ? 3 : 0);
    const freq = d.moe_layer_freq ?? 1;
    if (first > numLayers) failConfig(file, `first_k_dense_replace ${first} exceeds num_hidden_layers ${numLayers}`);
    const moe: FfnKind = routing.numSharedExperts > 0 ? 'moe+shared' : 'moe';
    // DeepSeek: MoE from layer first_k_dense_replace on, every moe_layer_freq layers.
    const kinds = Array.from({ length: numLayers }, (_, l): FfnKind => (l >= first && l % freq === 0 ? moe : 'dense'));
    return { kinds, numExperts, numExpertsPerTok: k, moeIntermediateSize, normTopkProb, routing, gatedSharedExpert: null };
  };
}

/** Grouped routing and the shared experts, checked against the expert count. */
function routingOf(file: string, d: DeepseekFieldsRaw, numExperts: number, k: number, moeIntermediateSize: number, v3: boolean): MoeRoutingSpec {
  const topkMethod = d.topk_method ?? (v3 ? 'noaux_tc' : 'greedy');
  const grouped = topkMethod !== 'greedy';
  const nGroup = grouped ? (d.n_group ?? failConfig(file, `n_group is missing: topk_method ${topkMethod} needs n_group and topk_group`)) : 1;
  const topkGroup = grouped ? (d.topk_group ?? failConfig(file, `topk_group is missing: topk_method ${topkMethod} needs n_group and topk_group`)) : 1;
  if (grouped) {
    if (topkGroup > nGroup) failConfig(file, `topk_group ${topkGroup} exceeds n_group ${nGroup}`);
    if (numExperts % nGroup !== 0) failConfig(file, `n_group ${nGroup} does not divide the ${numExperts} routed experts (n_routed_experts)`);
    if (topkGroup * (numExperts / nGroup) < k) failConfig(file, `topk_group ${topkGroup} groups of ${numExperts / nGroup} experts cannot hold num_experts_per_tok ${k}`);
    if (topkMethod === 'noaux_tc' && numExperts / nGroup < 2) failConfig(file, `noaux_tc scores groups by their top 2 experts: n_group ${nGroup} leaves groups of 1`);
  }
  const shared = d.n_shared_experts ?? 0;
  return {
    scoringFunc: d.scoring_func ?? (v3 ? 'sigmoid' : 'softmax'),
    topkMethod,
    nGroup,
    topkGroup,
    routedScalingFactor: d.routed_scaling_factor ?? (v3 ? 2.5 : 1),
    scoreCorrectionBias: topkMethod === 'noaux_tc',
    numSharedExperts: shared,
    sharedIntermediateSize: shared * moeIntermediateSize,
  };
}

/** yarn: mscale(factor, mscale_all_dim) when mscale_all_dim is set (the softmax scale grows by its square); else 1. */
function softmaxMscale(rope: RopeSettings): number {
  if (rope.ropeScaling.type !== 'yarn' || rope.mscaleAllDim <= 0) return 1;
  return yarnMscale(rope.ropeScaling.factor, rope.mscaleAllDim);
}
