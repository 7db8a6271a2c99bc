/**
 * Presets of the hybrid Gated DeltaNet families, Qwen3-Next and Qwen3.5-MoE: a tiny one of
 * each that make-model writes weights for (served by every role: the engine builds the gdn
 * layers with per-sequence state slots), and the
 * published full sizes, config only.
 */
import { common, qwenTokens, qwenVocab, type ModelPreset } from './presetCommon.js';

/**
 * Qwen3-Next: fields of the published Qwen3-Next-80B-A3B-Instruct config.json (layers from
 * full_attention_interval 4: three Gated DeltaNet layers, then one gated full-attention layer).
 */
function qwen3Next(o: Record<string, unknown>): Record<string, unknown> {
  return {
    architectures: ['Qwen3NextForCausalLM'],
    model_type: 'qwen3_next',
    ...common,
    ...qwenTokens,
    vocab_size: qwenVocab,
    attention_bias: false,
    rms_norm_eps: 1e-6,
    rope_theta: 1e7,
    rope_scaling: null,
    partial_rotary_factor: 0.25,
    max_position_embeddings: 262144,
    use_sliding_window: false,
    full_attention_interval: 4,
    decoder_sparse_step: 1,
    mlp_only_layers: [],
    norm_topk_prob: true,
    output_router_logits: false,
    router_aux_loss_coef: 0.001,
    ...o,
  };
}

/**
 * Qwen3.5-MoE (Qwen3_5MoeForConditionalGeneration): the language model in text_config, a
 * vision tower in vision_config that the engine ignores (text-only serving). RoPE as
 * transformers 5 writes it (rope_parameters with partial_rotary_factor and the multimodal
 * mrope_section, which is plain RoPE for text, where all three position ids are equal).
 */
function qwen35Moe(text: Record<string, unknown>, top: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    architectures: ['Qwen3_5MoeForConditionalGeneration'],
    model_type: 'qwen3_5_moe',
    // transformers' Qwen3_5MoeConfig defaults for the multimodal token ids.
    image_token_id: 248056,
    video_token_id: 248057,
    vision_start_token_id: 248053,
    vision_end_token_id: 248054,
    tie_word_embeddings: false,
    ...top,
    text_config: {
      model_type: 'qwen3_5_moe_text',
      ...common,
      attention_bias: false,
      rms_norm_eps: 1e-6,
      rope_parameters: { rope_type: 'default', rope_theta: 1e7, partial_rotary_factor: 0.25, mrope_section: [11, 11, 10], mrope_interleaved: true },
      max_position_embeddings: 262144,
      full_attention_interval: 4,
      output_router_logits: false,
      router_aux_loss_coef: 0.001,
      ...text,
    },
  };
}

/** Tiny hybrid shapes (both Qwen3-Next-style families): layers linear, linear, linear, full; odd GDN head sizes. */
const tinyHybrid = {
  hidden_size: 64,
  num_hidden_layers: 4,
  num_attention_heads: 4,
  num_key_value_heads: 2,
  head_dim: 16,
  linear_num_key_heads: 2,
  linear_num_value_heads: 4,
  linear_key_head_dim: 16,
  linear_value_head_dim: 12,
  linear_conv_kernel_dim: 4,
  num_experts: 8,
  num_experts_per_tok: 2,
  moe_intermediate_size: 24,
  shared_expert_intermediate_size: 40,
  layer_types: ['linear_attention', 'linear_attention', 'linear_attention', 'full_attention'],
  tie_word_embeddings: true,
};

export const hybridPresets: readonly ModelPreset[] = [
  {
    arch: 'qwen3_next',
    name: 'tiny',
    description:
      'Qwen3-Next layout: 4 layers linear, linear, linear, full; hidden 64, gated attention 4/2 heads of 16 (RoPE on 4 dims), GDN Hk 2 / Hv 4, Dk 16 / Dv 12, conv 4, 8 experts top-2 of 24 + a gated shared expert of 40, Qwen3 vocabulary, tied embeddings',
    weights: 'local',
    config: qwen3Next({ ...tinyHybrid, intermediate_size: 48 }),
  },
  {
    arch: 'qwen3_5_moe',
    name: 'tiny',
    description:
      'Qwen3.5-MoE layout: text_config with 4 layers linear, linear, linear, full, hidden 64, GDN Hk 2 / Hv 4, Dk 16 / Dv 12, 8 experts top-2 + a gated shared expert, Qwen3 vocabulary, tied embeddings; a small vision_config the engine ignores',
    weights: 'local',
    config: qwen35Moe(
      { ...tinyHybrid, tie_word_embeddings: undefined, vocab_size: qwenVocab, ...qwenTokens },
      { tie_word_embeddings: true, vision_config: { model_type: 'qwen3_5_moe', depth: 2, hidden_size: 32, intermediate_size: 64, num_heads: 2, out_hidden_size: 64 } },
    ),
  },
  {
    arch: 'qwen3_next',
    name: 'qwen3-next-80b-a3b',
    description:
      'Qwen3-Next-80B-A3B shapes: 48 layers (36 Gated DeltaNet: Hk 16 / Hv 32 of 128, 12 gated attention: 16/2 heads of 256, RoPE on 64 dims), hidden 2048, 512 experts top-10 of 512 + a gated shared expert of 512',
    weights: 'device',
    // The published Qwen3-Next-80B-A3B-Instruct config.json.
    config: qwen3Next({
      hidden_size: 2048, intermediate_size: 5120, num_hidden_layers: 48, num_attention_heads: 16, num_key_value_heads: 2, head_dim: 256,
      linear_num_key_heads: 16, linear_num_value_heads: 32, linear_key_head_dim: 128, linear_value_head_dim: 128, linear_conv_kernel_dim: 4,
      num_experts: 512, num_experts_per_tok: 10, moe_intermediate_size: 512, shared_expert_intermediate_size: 512, tie_word_embeddings: false,
    }),
  },
  {
    arch: 'qwen3_5_moe',
    name: 'qwen3.5-35b-a3b',
    description:
      'Qwen3.5-35B-A3B shapes (text only, vision tower ignored): 40 layers (30 Gated DeltaNet: Hk 16 / Hv 32 of 128, 10 gated attention: 16/2 heads of 256, RoPE on 64 dims), hidden 2048, 256 experts top-8 of 512 + a gated shared expert of 512, vocabulary 248320',
    weights: 'device',
    // Text shapes as published (checked against two independent copies of the text_config).
    // Not confirmed against the published file: the token ids (bos / eos 248044 is taken from
    // a third-party copy) and the vision_config (transformers' Qwen3_5MoeVisionConfig defaults
    // with out_hidden_size set to the text hidden size); neither affects the text model's tensors.
    config: qwen35Moe(
      {
        hidden_size: 2048, num_hidden_layers: 40, num_attention_heads: 16, num_key_value_heads: 2, head_dim: 256,
        linear_num_key_heads: 16, linear_num_value_heads: 32, linear_key_head_dim: 128, linear_value_head_dim: 128, linear_conv_kernel_dim: 4,
        num_experts: 256, num_experts_per_tok: 8, moe_intermediate_size: 512, shared_expert_intermediate_size: 512,
        vocab_size: 248320, bos_token_id: 248044, eos_token_id: 248044,
      },
      {
        vision_config: {
          model_type: 'qwen3_5_moe', depth: 27, hidden_size: 1152, hidden_act: 'gelu_pytorch_tanh', intermediate_size: 4304, num_heads: 16, in_channels: 3,
          patch_size: 16, spatial_merge_size: 2, temporal_patch_size: 2, out_hidden_size: 2048, num_position_embeddings: 2304, initializer_range: 0.02,
        },
      },
    ),
  },
];
