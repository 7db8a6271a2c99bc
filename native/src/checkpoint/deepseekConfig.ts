/**
 * The DeepSeek-V2/V3 part of config.json: MLA attention and grouped MoE routing with
 * shared experts. Every MLA field must be present (transformers would fill in its own
 * defaults, which describe another model); a bad or missing field is an error that
 * names it. Follows transformers' DeepseekV2/V3Config defaults for the rest and
 * DeepSeek's reference code where transformers simplifies (moe_layer_freq is honoured;
 * the yarn softmax scale applies to V2 as to V3).
 */
import { z } from 'zod';
import type { MlaSpec, ModelConfigSpec, MoeRoutingSpec } from '../modelSpec.js';
import { CheckpointError } from './errors.js';
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

/** The fields of ModelConfigSpec that DeepSeek decides. */
export type DeepseekFields = Pick<
  ModelConfigSpec,
  'numKvHeads' | 'headDim' | 'qkNorm' | 'numExperts' | 'numExpertsPerTok' | 'moeIntermediateSize' | 'normTopkProb' | 'moeLayers' | 'mla' | 'routing'
>;

/** MLA fields a DeepSeek config must spell out (q_lora_rank may be null). */
const mlaFields = ['q_lora_rank', 'kv_lora_rank', 'qk_nope_head_dim', 'qk_rope_head_dim', 'v_head_dim'] as const;

/**
 * Parse the DeepSeek fields of a config.json object whose base fields are already valid.
 * @param v3 DeepseekV3ForCausalLM (its defaults: sigmoid, noaux_tc, renormalised, x 2.5).
 */
export function parseDeepseek(file: string, json: Record<string, unknown>, numLayers: number, rope: RopeSettings, v3: boolean): DeepseekFields {
  const fail = (problem: string, fix?: string): never => {
    throw new CheckpointError(file, problem, fix ? { fix } : {});
  };
  for (const f of mlaFields) {
    if (!(f in json) || json[f] === undefined) fail(`${f} is missing: DeepSeek MLA needs ${mlaFields.join(', ')}`, `add ${f} to config.json (q_lora_rank may be null)`);
  }
  if (json['kv_lora_rank'] === 0) fail('kv_lora_rank is 0: MLA needs a positive latent rank', 'use the config that came with the checkpoint');
  const r = deepseekSchema.safeParse(json);
  if (!r.success) fail(`invalid DeepSeek config: ${r.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ')}`);
  const d = r.data!;
  if (d.qk_rope_head_dim % 2 !== 0) fail(`qk_rope_head_dim ${d.qk_rope_head_dim} must be even for RoPE`);
  if (json['attention_bias'] === true) fail('attention_bias is true: MLA projections with biases are not supported', 'set attention_bias to false');

  const mla: MlaSpec = {
    qLoraRank: d.q_lora_rank ?? 0,
    kvLoraRank: d.kv_lora_rank,
    qkNopeHeadDim: d.qk_nope_head_dim,
    qkRopeHeadDim: d.qk_rope_head_dim,
    vHeadDim: d.v_head_dim,
    ropeInterleave: v3 ? (d.rope_interleave ?? true) : true,
    softmaxScale: (d.qk_nope_head_dim + d.qk_rope_head_dim) ** -0.5 * softmaxMscale(rope) ** 2,
  };

  const numExperts = d.n_routed_experts ?? 0;
  let routing: MoeRoutingSpec | null = null;
  let moeLayers = new Array<boolean>(numLayers).fill(false);
  const k = d.num_experts_per_tok ?? 0;
  if (numExperts > 0) {
    if (k === 0) fail('num_experts_per_tok is missing: a DeepSeek MoE config needs it');
    if (k > numExperts) fail(`num_experts_per_tok ${k} exceeds the ${numExperts} routed experts (n_routed_experts)`);
    if (d.moe_intermediate_size === null || d.moe_intermediate_size === undefined) fail('moe_intermediate_size is missing: a DeepSeek MoE config needs it');
    const topkMethod = d.topk_method ?? (v3 ? 'noaux_tc' : 'greedy');
    const grouped = topkMethod !== 'greedy';
    const nGroup = grouped ? (d.n_group ?? fail(`n_group is missing: topk_method ${topkMethod} needs n_group and topk_group`)) : 1;
    const topkGroup = grouped ? (d.topk_group ?? fail(`topk_group is missing: topk_method ${topkMethod} needs n_group and topk_group`)) : 1;
    if (grouped) {
      if (topkGroup > nGroup) fail(`topk_group ${topkGroup} exceeds n_group ${nGroup}`);
      if (numExperts % nGroup !== 0) fail(`n_group ${nGroup} does not divide the ${numExperts} routed experts (n_routed_experts)`);
      if (topkGroup * (numExperts / nGroup) < k) fail(`topk_group ${topkGroup} groups of ${numExperts / nGroup} experts cannot hold num_experts_per_tok ${k}`);
      if (topkMethod === 'noaux_tc' && numExperts / nGroup < 2) fail(`noaux_tc scores groups by their top 2 experts: n_group ${nGroup} leaves groups of 1`);
    }
    const shared = d.n_shared_experts ?? 0;
    routing = {
      scoringFunc: d.scoring_func ?? (v3 ? 'sigmoid' : 'softmax'),
      topkMethod,
      nGroup,
      topkGroup,
      routedScalingFactor: d.routed_scaling_factor ?? (v3 ? 2.5 : 1),
      scoreCorrectionBias: topkMethod === 'noaux_tc',
      numSharedExperts: shared,
      sharedIntermediateSize: shared * d.moe_intermediate_size!,
    };
    const first = d.first_k_dense_replace ?? (v3 ? 3 : 0);
    const freq = d.moe_layer_freq ?? 1;
    if (first > numLayers) fail(`first_k_dense_replace ${first} exceeds num_hidden_layers ${numLayers}`);
    // DeepSeek: MoE from layer first_k_dense_replace on, every moe_layer_freq layers.
    moeLayers = moeLayers.map((_, l) => l >= first && l % freq === 0);
  }
  return {
    // One latent (and rope key) per token serves every head; RoPE runs over qk_rope_head_dim.
    numKvHeads: 1,
    headDim: d.qk_rope_head_dim,
    qkNorm: false,
    numExperts,
    numExpertsPerTok: numExperts > 0 ? k : 0,
    moeIntermediateSize: numExperts > 0 ? d.moe_intermediate_size! : 0,
    normTopkProb: d.norm_topk_prob ?? v3,
    moeLayers,
    mla,
    routing,
  };
}

/** yarn: mscale(factor, mscale_all_dim) when mscale_all_dim is set (the softmax scale grows by its square); else 1. */
function softmaxMscale(rope: RopeSettings): number {
  if (rope.ropeScaling.type !== 'yarn' || rope.mscaleAllDim <= 0) return 1;
  return yarnMscale(rope.ropeScaling.factor, rope.mscaleAllDim);
}
