/**
 * The shapes of a transformer that a roofline needs (roofline.ts), read from a Hugging
 * Face-style config.json: layers, hidden size, attention heads (GQA / MHA / MFA, or MLA's
 * compressed KV), experts and top-k, intermediate sizes, vocabulary, bytes per element.
 * Field names follow the configs of Qwen3-MoE, DeepSeek-V2/V3, Mixtral, Step-3 and the
 * hybrid Qwen3-Next / Qwen3.5-MoE (Gated DeltaNet layers beside gated full attention; a
 * vision-language config's text_config is its language model).
 */

export interface MlaShape {
  /** Low-rank query compression (0: none). */
  qLoraRank: number;
  /** The compressed KV latent, cached per token per layer. */
  kvLoraRank: number;
  /** Decoupled RoPE key dims, cached beside the latent. */
  ropeDim: number;
  nopeDim: number;
  vDim: number;
}

/**
 * Gated DeltaNet linear attention (Qwen3-Next, Qwen3.5): `layers` of the model keep a
 * fixed-size state per sequence (a [valueHeads, keyHeadDim, valueHeadDim] recurrent state
 * and the last convKernel - 1 inputs of the conv) instead of a KV cache.
 */
export interface LinearAttentionShape {
  /** Layers of linear attention; the other numLayers - layers are full attention. */
  layers: number;
  numKeyHeads: number;
  numValueHeads: number;
  keyHeadDim: number;
  valueHeadDim: number;
  convKernel: number;
}

export interface ModelShape {
  name: string;
  numLayers: number;
  hiddenSize: number;
  numHeads: number;
  numKvHeads: number;
  headDim: number;
  /** Low-rank query projection of GQA/MFA (Step-3's MFA); 0: none. */
  qLoraRank: number;
  /** DeepSeek's multi-head latent attention; absent: GQA/MHA/MFA with numKvHeads. */
  mla?: MlaShape;
  vocabSize: number;
  /** Bytes per weight element (2: bf16, 1: fp8). */
  bytesPerElement: number;
  /** Bytes per KV-cache element. */
  kvBytesPerElement: number;
  /** Layers with a dense FFN of denseIntermediate (the rest are MoE). */
  denseLayers: number;
  denseIntermediate: number;
  /** Routed experts (0: a dense model), experts per token, one expert's intermediate size. */
  experts: number;
  topK: number;
  moeIntermediate: number;
  /** Intermediate size of the shared expert(s) together, run for every token (0: none). */
  sharedIntermediate: number;
  /** Full-attention layers also project an output gate (q_proj twice as wide: Qwen3-Next, Qwen3.5). */
  attentionOutputGate?: boolean;
  /** Hybrid models: the linear-attention layers; absent: every layer is full attention. */
  linear?: LinearAttentionShape;
}

type Config = Record<string, unknown>;

function num(c: Config, ...keys: string[]): number | undefined {
  for (const k of keys) {
    const v = c[k];
    if (typeof v === 'number' && Number.isFinite(v)) return v;
  }
  return undefined;
}

function need(c: Config, name: string, ...keys: string[]): number {
  const v = num(c, ...keys);
  if (v === undefined || v <= 0) throw new Error(`model config ${name}: needs ${keys.join(' or ')} (a positive number)`);
  return v;
}

function dtypeBytes(dtype: unknown): number | undefined {
  if (typeof dtype !== 'string') return undefined;
  if (/float8|fp8/i.test(dtype)) return 1;
  if (/float32|fp32/i.test(dtype)) return 4;
  if (/bfloat16|float16|fp16|bf16/i.test(dtype)) return 2;
  return undefined;
}

/**
 * A model's shapes from a Hugging Face-style config object. `bytesPerElement` overrides the
 * config's torch_dtype (e.g. 1 for an FP8 deployment of a bf16 checkpoint).
 */
export function modelFromConfig(top: Config, o: { name?: string; bytesPerElement?: number; kvBytesPerElement?: number } = {}): ModelShape {
  const name = o.name ?? (typeof top.model_type === 'string' ? top.model_type : 'model');
  // A vision-language config (Qwen3.5-MoE) keeps its language model in text_config.
  const text = top.text_config;
  const c: Config = text && typeof text === 'object' && !Array.isArray(text) ? { ...top, ...(text as Config) } : top;
  const numLayers = need(c, name, 'num_hidden_layers', 'num_layers');
  const hiddenSize = need(c, name, 'hidden_size');
  const numHeads = need(c, name, 'num_attention_heads');
  const numKvHeads = num(c, 'num_key_value_heads', 'num_attention_groups') ?? numHeads;
  const headDim = num(c, 'head_dim') ?? hiddenSize / numHeads;
  const experts = num(c, 'n_routed_experts', 'num_experts', 'num_local_experts', 'moe_num_experts') ?? 0;
  const topK = experts > 0 ? need(c, name, 'num_experts_per_tok', 'moe_top_k') : 0;
  const denseIntermediate = num(c, 'intermediate_size') ?? 0;
  const moeIntermediate = experts > 0 ? (num(c, 'moe_intermediate_size') ?? need(c, name, 'intermediate_size')) : 0;
  const sharedCount = num(c, 'n_shared_experts', 'share_expert_num') ?? 0;
  const sharedIntermediate = num(c, 'shared_expert_intermediate_size', 'share_expert_dim') ?? sharedCount * moeIntermediate;
  // Dense layers: DeepSeek's first_k_dense_replace, Step-3's moe_layers_enum (the MoE ones), Qwen's mlp_only_layers.
  let denseLayers = experts > 0 ? (num(c, 'first_k_dense_replace') ?? 0) : numLayers;
  if (experts > 0 && typeof c.moe_layers_enum === 'string') denseLayers = numLayers - c.moe_layers_enum.split(',').filter((s) => s.trim() !== '').length;
  if (experts > 0 && Array.isArray(c.mlp_only_layers)) denseLayers = c.mlp_only_layers.length;
  if (denseLayers > 0 && denseIntermediate <= 0) throw new Error(`model config ${name}: ${denseLayers} dense layers need intermediate_size`);
  const kvLoraRank = num(c, 'kv_lora_rank');
  const mla = kvLoraRank
    ? { qLoraRank: num(c, 'q_lora_rank') ?? 0, kvLoraRank, ropeDim: need(c, name, 'qk_rope_head_dim'), nopeDim: need(c, name, 'qk_nope_head_dim'), vDim: need(c, name, 'v_head_dim') }
    : undefined;
  const bytesPerElement = o.bytesPerElement ?? dtypeBytes(c.torch_dtype ?? c.dtype) ?? 2;
  const linear = linearShape(c, name, numLayers);
  return {
    name, numLayers, hiddenSize, numHeads, numKvHeads, headDim,
    qLoraRank: mla ? 0 : (num(c, 'q_lora_rank') ?? 0),
    ...(mla ? { mla } : {}),
    vocabSize: need(c, name, 'vocab_size'),
    bytesPerElement,
    kvBytesPerElement: o.kvBytesPerElement ?? bytesPerElement,
    denseLayers, denseIntermediate, experts, topK, moeIntermediate, sharedIntermediate,
    ...(linear ? { linear, attentionOutputGate: true } : {}),
  };
}

/** Model types of the hybrid Gated DeltaNet families (their configs may leave the linear fields to transformers' defaults). */
const hybridTypes = new Set(['qwen3_next', 'qwen3_5_moe', 'qwen3_5_moe_text']);

/**
 * The linear-attention layers of a hybrid config: layer_types ("linear_attention"), else
 * every full_attention_interval-th layer (default 4) is full attention; transformers'
 * defaults for the head fields (16 key / 32 value heads of 128, conv 4). Undefined for a
 * config of another family.
 */
function linearShape(c: Config, name: string, numLayers: number): LinearAttentionShape | undefined {
  const hybrid = (typeof c.model_type === 'string' && hybridTypes.has(c.model_type)) || num(c, 'linear_num_value_heads') !== undefined;
  if (!hybrid) return undefined;
  let layers: number;
  if (Array.isArray(c.layer_types)) {
    if (c.layer_types.length !== numLayers) throw new Error(`model config ${name}: layer_types has ${c.layer_types.length} entries for ${numLayers} layers`);
    layers = c.layer_types.filter((t) => t === 'linear_attention' || t === 'mamba').length; // 'mamba': transformers' legacy name
  } else {
    const interval = num(c, 'full_attention_interval') ?? 4;
    layers = numLayers - Math.floor(numLayers / interval);
  }
  return {
    layers,
    numKeyHeads: num(c, 'linear_num_key_heads') ?? 16,
    numValueHeads: num(c, 'linear_num_value_heads') ?? 32,
    keyHeadDim: num(c, 'linear_key_head_dim') ?? 128,
    valueHeadDim: num(c, 'linear_value_head_dim') ?? 128,
    convKernel: num(c, 'linear_conv_kernel_dim') ?? 4,
  };
}

/**
 * Config excerpts of public checkpoints (the fields above, from their config.json as
 * published on Hugging Face). Step-3's is "Step-3-like": the shapes its paper describes
 * (MFA: 64 query heads sharing one 256-dim KV head, low-rank query 2048; 48 experts, top-3,
 * one shared expert), rounded where we did not have the file.
 */
export const MODEL_CONFIGS: Readonly<Record<string, Config>> = {
  'qwen3-30b-a3b': { model_type: 'qwen3_moe', num_hidden_layers: 48, hidden_size: 2048, num_attention_heads: 32, num_key_value_heads: 4, head_dim: 128, num_experts: 128, num_experts_per_tok: 8, intermediate_size: 6144, moe_intermediate_size: 768, vocab_size: 151936, torch_dtype: 'bfloat16' },
  'deepseek-v3': { model_type: 'deepseek_v3', num_hidden_layers: 61, hidden_size: 7168, num_attention_heads: 128, num_key_value_heads: 128, q_lora_rank: 1536, kv_lora_rank: 512, qk_rope_head_dim: 64, qk_nope_head_dim: 128, v_head_dim: 128, n_routed_experts: 256, num_experts_per_tok: 8, n_shared_experts: 1, moe_intermediate_size: 2048, first_k_dense_replace: 3, intermediate_size: 18432, vocab_size: 129280, torch_dtype: 'bfloat16' },
  'deepseek-v2-lite': { model_type: 'deepseek_v2', num_hidden_layers: 27, hidden_size: 2048, num_attention_heads: 16, num_key_value_heads: 16, kv_lora_rank: 512, qk_rope_head_dim: 64, qk_nope_head_dim: 128, v_head_dim: 128, n_routed_experts: 64, num_experts_per_tok: 6, n_shared_experts: 2, moe_intermediate_size: 1408, first_k_dense_replace: 1, intermediate_size: 10944, vocab_size: 102400, torch_dtype: 'bfloat16' },
  'step3-like': { model_type: 'step3', num_hidden_layers: 61, hidden_size: 7168, num_attention_heads: 64, num_attention_groups: 1, head_dim: 256, q_lora_rank: 2048, moe_num_experts: 48, moe_top_k: 3, moe_intermediate_size: 5120, share_expert_dim: 5120, intermediate_size: 18432, first_k_dense_replace: 5, vocab_size: 128815, torch_dtype: 'bfloat16' },
  // Qwen3-Next-80B-A3B-Instruct: 36 Gated DeltaNet + 12 gated full-attention layers (interval 4).
  'qwen3-next-80b-a3b': { model_type: 'qwen3_next', num_hidden_layers: 48, hidden_size: 2048, num_attention_heads: 16, num_key_value_heads: 2, head_dim: 256, full_attention_interval: 4, linear_num_key_heads: 16, linear_num_value_heads: 32, linear_key_head_dim: 128, linear_value_head_dim: 128, linear_conv_kernel_dim: 4, num_experts: 512, num_experts_per_tok: 10, intermediate_size: 5120, moe_intermediate_size: 512, shared_expert_intermediate_size: 512, vocab_size: 151936, torch_dtype: 'bfloat16' },
  // Qwen3.5-35B-A3B (its text_config): 30 Gated DeltaNet + 10 gated full-attention layers, every layer MoE.
  'qwen3.5-35b-a3b': { model_type: 'qwen3_5_moe', text_config: { model_type: 'qwen3_5_moe_text', num_hidden_layers: 40, hidden_size: 2048, num_attention_heads: 16, num_key_value_heads: 2, head_dim: 256, full_attention_interval: 4, linear_num_key_heads: 16, linear_num_value_heads: 32, linear_key_head_dim: 128, linear_value_head_dim: 128, linear_conv_kernel_dim: 4, num_experts: 256, num_experts_per_tok: 8, moe_intermediate_size: 512, shared_expert_intermediate_size: 512, vocab_size: 248320, dtype: 'bfloat16' } },
  'mixtral-8x22b': { model_type: 'mixtral', num_hidden_layers: 56, hidden_size: 6144, num_attention_heads: 48, num_key_value_heads: 8, head_dim: 128, num_local_experts: 8, num_experts_per_tok: 2, intermediate_size: 16384, vocab_size: 32768, torch_dtype: 'bfloat16' },
};

/** A model of MODEL_CONFIGS by name, or an error naming the known ones. */
export function modelPreset(name: string, o: { bytesPerElement?: number; kvBytesPerElement?: number } = {}): ModelShape {
  const c = MODEL_CONFIGS[name];
  if (!c) throw new Error(`unknown model "${name}": known shapes are ${Object.keys(MODEL_CONFIGS).join(', ')} (or pass a config.json)`);
  return modelFromConfig(c, { name, ...o });
}
