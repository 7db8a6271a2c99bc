/**
 * Model presets as data: one row per (architecture, preset) with the exact HuggingFace
 * config.json it produces. Tiny presets are for the CPU (make-model writes their random
 * weights in seconds); full-size presets carry real model shapes for GPU benchmarks,
 * which create their weights on the device (make-model writes only their config).
 */
import type { ArchFamily } from '@afd/native/checkpoint';

/** One preset. */
export interface ModelPreset {
  arch: ArchFamily;
  /** Preset name, unique per arch ("tiny", "qwen3-30b-a3b" ...). */
  name: string;
  description: string;
  /** 'local': make-model writes weights; 'device': config only, weights are created on the GPU. */
  weights: 'local' | 'device';
  /** The config.json written for this preset. */
  config: Record<string, unknown>;
}

/** Qwen3 tokenizer ids (the tokenizer every preset ships with). */
const qwenTokens = { bos_token_id: 151643, eos_token_id: 151645 };
const qwenVocab = 151936;

const common = { hidden_act: 'silu', initializer_range: 0.02, use_cache: true, attention_dropout: 0, torch_dtype: 'bfloat16' };

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
