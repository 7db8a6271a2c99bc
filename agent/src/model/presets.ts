/**
 * Model presets as data: one row per (architecture, preset) with the exact HuggingFace
 * config.json it produces. Tiny presets are for the CPU (make-model writes their random
 * weights in seconds); full-size presets carry real model shapes for GPU benchmarks,
 * which create their weights on the device (make-model writes only their config).
 */
import type { ArchFamily } from '@afd/native/checkpoint';
import { hybridPresets } from './hybridPresets.js';
import { common, qwenTokens, qwenVocab, type ModelPreset } from './presetCommon.js';

export type { ModelPreset } from './presetCommon.js';

/** Fields every Qwen3 config (dense and MoE) shares. */
const qwenBase = {
  ...common,
  ...qwenTokens,
  vocab_size: qwenVocab,
  attention_bias: false,
  rms_norm_eps: 1e-6,
  rope_theta: 1e6,
  rope_scaling: null,
  max_position_embeddings: 40960,
  use_sliding_window: false,
  sliding_window: null,
};

function qwen3Moe(o: Record<string, unknown>): Record<string, unknown> {
  return {
    architectures: ['Qwen3MoeForCausalLM'],
    model_type: 'qwen3_moe',
    ...qwenBase,
    decoder_sparse_step: 1,
    mlp_only_layers: [],
    norm_topk_prob: true,
    output_router_logits: false,
    router_aux_loss_coef: 0.001,
    ...o,
  };
}

function qwen3(o: Record<string, unknown>): Record<string, unknown> {
  return {
    architectures: ['Qwen3ForCausalLM'],
    model_type: 'qwen3',
    ...qwenBase,
    ...o,
  };
}

function llama(o: Record<string, unknown>): Record<string, unknown> {
  return {
    architectures: ['LlamaForCausalLM'],
    model_type: 'llama',
    ...common,
    attention_bias: false,
    mlp_bias: false,
    rms_norm_eps: 1e-5,
    rope_theta: 500000,
    rope_scaling: { rope_type: 'llama3', factor: 8, low_freq_factor: 1, high_freq_factor: 4, original_max_position_embeddings: 8192 },
    max_position_embeddings: 131072,
    ...o,
  };
}

function mixtral(o: Record<string, unknown>): Record<string, unknown> {
  return {
    architectures: ['MixtralForCausalLM'],
    model_type: 'mixtral',
    ...common,
    rms_norm_eps: 1e-5,
    rope_theta: 1e6,
    max_position_embeddings: 32768,
    sliding_window: null,
    num_local_experts: 8,
    num_experts_per_tok: 2,
    output_router_logits: false,
    router_aux_loss_coef: 0.02,
    ...o,
  };
}

/** Fields every DeepSeek config shares (from the published DeepSeek-V2-Lite / V3 configs). */
const deepseekBase = {
  ...common,
  attention_bias: false,
  rms_norm_eps: 1e-6,
  rope_theta: 10000,
  moe_layer_freq: 1,
  aux_loss_alpha: 0.001,
  seq_aux: true,
  pretraining_tp: 1,
};

/** DeepSeek's published yarn scaling (factor 40 over 4096 positions = 163840). */
const deepseekYarn = (mscale: number) => ({ type: 'yarn', factor: 40, original_max_position_embeddings: 4096, beta_fast: 32, beta_slow: 1, mscale, mscale_all_dim: mscale });

function deepseekV2(o: Record<string, unknown>): Record<string, unknown> {
  return {
    architectures: ['DeepseekV2ForCausalLM'],
    model_type: 'deepseek_v2',
    ...deepseekBase,
    topk_method: 'greedy',
    scoring_func: 'softmax',
    n_group: 1,
    topk_group: 1,
    norm_topk_prob: false,
    routed_scaling_factor: 1.0,
    ...o,
  };
}

function deepseekV3(o: Record<string, unknown>): Record<string, unknown> {
  return {
    architectures: ['DeepseekV3ForCausalLM'],
    model_type: 'deepseek_v3',
    ...deepseekBase,
    topk_method: 'noaux_tc',
    scoring_func: 'sigmoid',
    norm_topk_prob: true,
    ...o,
  };
}

/** Tiny shapes shared by the CPU presets: 4 layers, hidden 256, 4 q / 2 kv heads of 64. */
const tinyShape = { hidden_size: 256, num_hidden_layers: 4, num_attention_heads: 4, num_key_value_heads: 2, head_dim: 64, tie_word_embeddings: true };

export const modelPresets: readonly ModelPreset[] = [
  {
    arch: 'qwen3_moe',
    name: 'tiny',
    description: 'CPU default: Qwen3-MoE layout, 4 layers, hidden 256, 8 experts top-2, real Qwen3 vocabulary, tied embeddings (~92 MB)',
    weights: 'local',
    config: qwen3Moe({ ...tinyShape, intermediate_size: 768, num_experts: 8, num_experts_per_tok: 2, moe_intermediate_size: 256 }),
  },
  {
    arch: 'qwen3',
    name: 'tiny',
    description: 'dense Qwen3, 4 layers, hidden 256, MLP 768, tied embeddings',
    weights: 'local',
    config: qwen3({ ...tinyShape, intermediate_size: 768 }),
  },
  {
    arch: 'llama',
    name: 'tiny',
    description: 'Llama 3 layout (llama3 RoPE scaling), 4 layers, hidden 256, MLP 768, Qwen3 vocabulary, tied embeddings',
    weights: 'local',
    config: llama({ ...tinyShape, head_dim: undefined, intermediate_size: 768, vocab_size: qwenVocab, ...qwenTokens }),
  },
  {
    arch: 'mixtral',
    name: 'tiny',
    description: 'Mixtral layout, 4 layers, hidden 256, 8 experts top-2 of size 256, Qwen3 vocabulary, tied embeddings',
    weights: 'local',
    config: mixtral({ ...tinyShape, head_dim: undefined, intermediate_size: 256, vocab_size: qwenVocab, ...qwenTokens }),
  },
  {
    arch: 'deepseek_v2',
    name: 'tiny',
    description: 'DeepSeek-V2-Lite layout for tests: MLA (no q_lora, kv_lora 64, nope 32 / rope 16 / v 32), 4 layers with layer 0 dense, 10 experts top-2 + 2 shared, hidden 256, Qwen3 vocabulary, tied embeddings',
    weights: 'local',
    config: deepseekV2({
      ...tinyShape,
      head_dim: undefined,
      num_key_value_heads: 4,
      vocab_size: qwenVocab,
      ...qwenTokens,
      intermediate_size: 768,
      moe_intermediate_size: 128,
      q_lora_rank: null,
      kv_lora_rank: 64,
      qk_nope_head_dim: 32,
      qk_rope_head_dim: 16,
      v_head_dim: 32,
      n_routed_experts: 10,
      n_shared_experts: 2,
      num_experts_per_tok: 2,
      first_k_dense_replace: 1,
      max_position_embeddings: 40960,
    }),
  },
  {
    arch: 'qwen3_moe',
    name: 'qwen3-30b-a3b',
    description: 'Qwen3-30B-A3B shapes: 48 layers, hidden 2048, 128 experts top-8 of 768, 32/4 heads of 128',
    weights: 'device',
    config: qwen3Moe({ hidden_size: 2048, intermediate_size: 6144, num_hidden_layers: 48, num_attention_heads: 32, num_key_value_heads: 4, head_dim: 128, num_experts: 128, num_experts_per_tok: 8, moe_intermediate_size: 768, tie_word_embeddings: false }),
  },
  {
    arch: 'qwen3_moe',
    name: 'qwen3-235b-a22b',
    description: 'Qwen3-235B-A22B shapes: 94 layers, hidden 4096, 128 experts top-8 of 1536, 64/4 heads of 128',
    weights: 'device',
    config: qwen3Moe({ hidden_size: 4096, intermediate_size: 12288, num_hidden_layers: 94, num_attention_heads: 64, num_key_value_heads: 4, head_dim: 128, num_experts: 128, num_experts_per_tok: 8, moe_intermediate_size: 1536, tie_word_embeddings: false }),
  },
  {
    arch: 'qwen3',
    name: 'qwen3-8b',
    description: 'Qwen3-8B shapes: 36 layers, hidden 4096, MLP 12288, 32/8 heads of 128',
    weights: 'device',
    config: qwen3({ hidden_size: 4096, intermediate_size: 12288, num_hidden_layers: 36, num_attention_heads: 32, num_key_value_heads: 8, head_dim: 128, tie_word_embeddings: false }),
  },
  {
    arch: 'llama',
    name: 'llama-3.1-8b',
    description: 'Llama-3.1-8B shapes: 32 layers, hidden 4096, MLP 14336, 32/8 heads, vocabulary 128256 (ids beyond it from the Qwen3 tokenizer are invalid)',
    weights: 'device',
    config: llama({ hidden_size: 4096, intermediate_size: 14336, num_hidden_layers: 32, num_attention_heads: 32, num_key_value_heads: 8, vocab_size: 128256, bos_token_id: 128000, eos_token_id: [128001, 128008, 128009], tie_word_embeddings: false }),
  },
  {
    arch: 'mixtral',
    name: 'mixtral-8x7b',
    description: 'Mixtral-8x7B shapes: 32 layers, hidden 4096, 8 experts top-2 of 14336, 32/8 heads, vocabulary 32000',
    weights: 'device',
    config: mixtral({ hidden_size: 4096, intermediate_size: 14336, num_hidden_layers: 32, num_attention_heads: 32, num_key_value_heads: 8, vocab_size: 32000, bos_token_id: 1, eos_token_id: 2, tie_word_embeddings: false }),
  },
  {
    arch: 'deepseek_v2',
    name: 'deepseek-v2-lite',
    description: 'DeepSeek-V2-Lite shapes: 27 layers, hidden 2048, 16 heads, MLA kv_lora 512 (no q_lora), nope 128 / rope 64 / v 128, 64 experts top-6 of 1408 + 2 shared, layer 0 dense, vocabulary 102400 (ids beyond it from the Qwen3 tokenizer are invalid)',
    weights: 'device',
    config: deepseekV2({
      hidden_size: 2048, intermediate_size: 10944, moe_intermediate_size: 1408, num_hidden_layers: 27, num_attention_heads: 16, num_key_value_heads: 16,
      q_lora_rank: null, kv_lora_rank: 512, qk_nope_head_dim: 128, qk_rope_head_dim: 64, v_head_dim: 128,
      n_routed_experts: 64, n_shared_experts: 2, num_experts_per_tok: 6, first_k_dense_replace: 1,
      vocab_size: 102400, bos_token_id: 100000, eos_token_id: 100001, tie_word_embeddings: false,
      max_position_embeddings: 163840, rope_scaling: deepseekYarn(0.707),
    }),
  },
  {
    arch: 'deepseek_v3',
    name: 'deepseek-v3',
    description: 'DeepSeek-V3 shapes (bf16): 61 layers, hidden 7168, 128 heads, MLA q_lora 1536 / kv_lora 512, 256 experts top-8 of 2048 + 1 shared, noaux_tc sigmoid over 8 groups keeping 4, 3 dense layers, vocabulary 129280',
    weights: 'device',
    config: deepseekV3({
      hidden_size: 7168, intermediate_size: 18432, moe_intermediate_size: 2048, num_hidden_layers: 61, num_attention_heads: 128, num_key_value_heads: 128,
      q_lora_rank: 1536, kv_lora_rank: 512, qk_nope_head_dim: 128, qk_rope_head_dim: 64, v_head_dim: 128,
      n_routed_experts: 256, n_shared_experts: 1, num_experts_per_tok: 8, n_group: 8, topk_group: 4, routed_scaling_factor: 2.5, first_k_dense_replace: 3,
      ep_size: 1, num_nextn_predict_layers: 1,
      vocab_size: 129280, bos_token_id: 0, eos_token_id: 1, tie_word_embeddings: false,
      max_position_embeddings: 163840, rope_scaling: deepseekYarn(1.0),
    }),
  },
  ...hybridPresets,
];

/** Find a preset; the error lists what exists. */
export function findPreset(arch: string, name: string): ModelPreset {
  const found = modelPresets.find((p) => p.arch === arch && p.name === name);
  if (found) return found;
  const archs = [...new Set(modelPresets.map((p) => p.arch))];
  if (!archs.includes(arch as ArchFamily)) throw new Error(`unknown architecture ${JSON.stringify(arch)}: choose one of ${archs.join(', ')}`);
  const names = modelPresets.filter((p) => p.arch === arch).map((p) => p.name);
  throw new Error(`unknown preset ${JSON.stringify(name)} for ${arch}: choose one of ${names.join(', ')}`);
}

/** The config.json object of a preset, without undefined fields. */
export function presetConfigJson(preset: ModelPreset): Record<string, unknown> {
  return JSON.parse(JSON.stringify(preset.config)) as Record<string, unknown>;
}
