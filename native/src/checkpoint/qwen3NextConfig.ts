/**
 * The Qwen3-Next and Qwen3.5-MoE readers of the family table (families.ts): hybrid
 * decoders whose layers are Gated DeltaNet linear attention (layer_types
 * "linear_attention": kind gdn) or gated full attention ("full_attention": kind
 * gqa_gated), each followed by a softmax top-k MoE plus one sigmoid-gated shared expert
 * (kind moe+gated_shared). Follows transformers' Qwen3NextConfig / Qwen3_5MoeTextConfig:
 * their defaults, layer_types derived from full_attention_interval when absent, and the
 * module shapes of modeling_qwen3_next.py / modeling_qwen3_5_moe.py.
 */
import { z } from 'zod';
import type { AttentionKind, FfnKind, GdnSpec } from '../modelSpec.js';
import { failConfig, gqaFields, parseWith, type AttentionFields, type FamilyInput, type FfnFields } from './familyFields.js';

const posInt = z.int().min(1);

/** transformers' defaults of the linear-attention fields (both config classes). */
export const linearAttentionDefaults = { numKeyHeads: 16, numValueHeads: 32, keyHeadDim: 128, valueHeadDim: 128, convKernel: 4 } as const;
/** Every full_attention_interval-th layer is full attention when layer_types is absent (transformers default 4). */
export const defaultFullAttentionInterval = 4;
/** transformers sets partial_rotary_factor to 0.25 when the config has none ("assign default for BC"). */
export const defaultPartialRotaryFactor = 0.25;

/** The layer types transformers knows for these families. */
const layerTypes = ['linear_attention', 'full_attention'] as const;
type LayerType = (typeof layerTypes)[number];
/** Legacy names transformers still accepts (remap_legacy_layer_types). */
const legacyLayerTypes: Readonly<Record<string, LayerType>> = { mamba: 'linear_attention', attention: 'full_attention' };

const hybridSchema = z.looseObject({
  layer_types: z.array(z.string()).nullish(),
  full_attention_interval: posInt.nullish(),
  linear_num_key_heads: posInt.nullish(),
  linear_num_value_heads: posInt.nullish(),
  linear_key_head_dim: posInt.nullish(),
  linear_value_head_dim: posInt.nullish(),
  linear_conv_kernel_dim: posInt.nullish(),
  partial_rotary_factor: z.number().gt(0).max(1).nullish(),
});

type HybridFields = z.infer<typeof hybridSchema>;

/** Each layer's type: layer_types, or linear except every full_attention_interval-th layer (transformers). */
export function hybridLayerTypes(file: string, h: HybridFields, numLayers: number): LayerType[] {
  if (h.layer_types) {
    if (h.layer_types.length !== numLayers) failConfig(file, `layer_types has ${h.layer_types.length} entries but num_hidden_layers is ${numLayers}`, 'give one layer type per layer');
    return h.layer_types.map((t, l) =>
      (layerTypes as readonly string[]).includes(t) ? (t as LayerType) : (legacyLayerTypes[t] ?? failConfig(file, `layer_types[${l}] is "${t}" (supported: ${layerTypes.join(', ')})`)),
    );
  }
  const interval = h.full_attention_interval ?? defaultFullAttentionInterval;
  return Array.from({ length: numLayers }, (_, l): LayerType => ((l + 1) % interval === 0 ? 'full_attention' : 'linear_attention'));
}

/** partial_rotary_factor: transformers 5 keeps it in rope_parameters (maybe keyed by layer type), transformers 4 at the top. */
function partialRotaryFactor(file: string, json: Record<string, unknown>, h: HybridFields): number {
  const params = json['rope_parameters'];
  let fromParams: unknown;
  if (params && typeof params === 'object') {
    const p = params as Record<string, unknown>;
    const full = p['full_attention'];
    fromParams = full && typeof full === 'object' ? (full as Record<string, unknown>)['partial_rotary_factor'] : p['partial_rotary_factor'];
  }
  const factor = fromParams ?? h.partial_rotary_factor ?? defaultPartialRotaryFactor;
  if (typeof factor !== 'number' || !(factor > 0 && factor <= 1)) failConfig(file, `partial_rotary_factor must be a number in (0, 1], got ${JSON.stringify(factor)}`);
  return factor;
}

/**
 * Hybrid attention: gdn layers with GdnSpec (projections stored grouped, Qwen3-Next, or
 * split, Qwen3.5) and gqa_gated layers (q/k norms, output gate, partial RoPE). Qwen3NextConfig
 * defaults num_key_value_heads to 2 and head_dim to 256 (the row's default).
 */
export function hybridAttention(projLayout: GdnSpec['projLayout']): (input: FamilyInput) => AttentionFields {
  return (input) => {
    const { file, json, numLayers } = input;
    const h = parseWith(file, hybridSchema, json);
    const types = hybridLayerTypes(file, h, numLayers);
    const { kind: _gqa, ...full } = gqaFields(input, { qkNorm: true, biases: 'attention_bias', defaultKvHeads: 2 });
    // transformers: dim = int(head_dim * partial_rotary_factor); RoPE rotates those dims (rotate-half), the rest pass.
    const rotaryDim = Math.floor(full.headDim * partialRotaryFactor(file, json, h));
    if (rotaryDim < 2 || rotaryDim % 2 !== 0) failConfig(file, `head_dim ${full.headDim} x partial_rotary_factor gives ${rotaryDim} rotary dims; RoPE needs an even number >= 2`);
    const d = linearAttentionDefaults;
    const gdn: GdnSpec = {
      numKeyHeads: h.linear_num_key_heads ?? d.numKeyHeads,
      numValueHeads: h.linear_num_value_heads ?? d.numValueHeads,
      keyHeadDim: h.linear_key_head_dim ?? d.keyHeadDim,
      valueHeadDim: h.linear_value_head_dim ?? d.valueHeadDim,
      convKernel: h.linear_conv_kernel_dim ?? d.convKernel,
      projLayout,
    };
    if (gdn.numValueHeads % gdn.numKeyHeads !== 0) {
      failConfig(file, `linear_num_value_heads ${gdn.numValueHeads} is not a multiple of linear_num_key_heads ${gdn.numKeyHeads}`, 'each key head serves a whole number of value heads');
    }
    const kinds = types.map((t): AttentionKind => (t === 'full_attention' ? 'gqa_gated' : 'gdn'));
    return { ...full, rotaryDim, gdn: kinds.includes('gdn') ? gdn : null, kinds };
  };
}

const nextMoeSchema = z.looseObject({
  num_experts: z.int().min(0).nullish(),
  num_experts_per_tok: posInt.nullish(),
  moe_intermediate_size: posInt.nullish(),
  shared_expert_intermediate_size: posInt.nullish(),
  norm_topk_prob: z.boolean().nullish(),
  decoder_sparse_step: posInt.nullish(),
  mlp_only_layers: z.array(z.int().min(0)).nullish(),
});

/** The MoE defaults of the two config classes. */
const moeDefaults = {
  next: { numExperts: 512, topK: 10 },
  '3.5': { numExperts: 256, topK: 8 },
} as const;

/**
 * The FFN of Qwen3-Next ('next'): moe+gated_shared where the layer is not in mlp_only_layers,
 * num_experts > 0 and (layer + 1) % decoder_sparse_step == 0, else a dense MLP of
 * intermediate_size; norm_topk_prob default true. Qwen3.5-MoE ('3.5'): every layer
 * moe+gated_shared and the top-k always renormalised (its config class deletes
 * intermediate_size, decoder_sparse_step, norm_topk_prob and mlp_only_layers, and its router
 * renormalises unconditionally; those keys are ignored when a config carries them).
 */
export function qwen3NextFfn(flavour: 'next' | '3.5'): (input: FamilyInput) => FfnFields {
  return ({ file, json, numLayers }) => {
    const m = parseWith(file, nextMoeSchema, json);
    const d = moeDefaults[flavour];
    const numExperts = m.num_experts ?? d.numExperts;
    const shared = m.shared_expert_intermediate_size ?? 512;
    const fields = {
      numExperts,
      numExpertsPerTok: numExperts > 0 ? (m.num_experts_per_tok ?? d.topK) : 0,
      moeIntermediateSize: numExperts > 0 ? (m.moe_intermediate_size ?? 512) : 0,
      routing: null,
      gatedSharedExpert: numExperts > 0 ? { intermediateSize: shared } : null,
    };
    if (flavour === '3.5') {
      if (numExperts === 0) failConfig(file, 'num_experts is 0: every Qwen3.5-MoE layer is a MoE layer', 'use the config that came with the checkpoint');
      return { ...fields, kinds: new Array<FfnKind>(numLayers).fill('moe+gated_shared'), normTopkProb: true };
    }
    const step = m.decoder_sparse_step ?? 1;
    const mlpOnly = new Set(m.mlp_only_layers ?? []);
    for (const l of mlpOnly) if (l >= numLayers) failConfig(file, `mlp_only_layers entry ${l} is not a layer index (num_hidden_layers ${numLayers})`);
    const kinds = Array.from({ length: numLayers }, (_, l): FfnKind => (!mlpOnly.has(l) && numExperts > 0 && (l + 1) % step === 0 ? 'moe+gated_shared' : 'dense'));
    const anyMoe = kinds.includes('moe+gated_shared');
    return { ...fields, ...(anyMoe ? {} : { gatedSharedExpert: null }), kinds, normTopkProb: m.norm_topk_prob ?? true };
  };
}

/**
 * Qwen3_5MoeForConditionalGeneration keeps the language model in text_config (and a vision
 * encoder in vision_config). The engine serves text only: this reads text_config as the
 * model's config (architectures and tie_word_embeddings from the top level, which is where
 * transformers reads them; any other field the text config lacks, e.g. torch_dtype, too)
 * and ignores vision_config and the vision weights (model.visual.*).
 */
export function flattenTextConfig(file: string, json: Record<string, unknown>): { flat: Record<string, unknown>; visionTowerIgnored: boolean } {
  const text = json['text_config'];
  if (!text || typeof text !== 'object' || Array.isArray(text)) {
    failConfig(file, `${JSON.stringify(json['architectures'])} keeps the language model in text_config, which is missing`, 'use the config.json that came with the checkpoint');
  }
  const { text_config: _text, vision_config: vision, ...top } = json;
  const inner = text as Record<string, unknown>;
  const flat: Record<string, unknown> = { ...top, ...inner, architectures: top['architectures'] };
  if (top['tie_word_embeddings'] !== undefined) flat['tie_word_embeddings'] = top['tie_word_embeddings'];
  return { flat, visionTowerIgnored: vision !== undefined && vision !== null };
}
