import { describe, expect, it } from 'vitest';
import { parseModelConfig } from './config.js';
import { modelTensors, roleTensors } from './tensorTables.js';
import { yarnMscale } from './rope.js';

const parse = (c: Record<string, unknown>) => parseModelConfig('/m/config.json', c);

/** DeepSeek-V2-Lite's published config.json (deepseek-ai/DeepSeek-V2-Lite), less auto_map. */
const v2Lite = (o: Record<string, unknown> = {}): Record<string, unknown> => ({
  architectures: ['DeepseekV2ForCausalLM'],
  attention_bias: false,
  attention_dropout: 0.0,
  aux_loss_alpha: 0.001,
  bos_token_id: 100000,
  eos_token_id: 100001,
  first_k_dense_replace: 1,
  hidden_act: 'silu',
  hidden_size: 2048,
  initializer_range: 0.02,
  intermediate_size: 10944,
  kv_lora_rank: 512,
  max_position_embeddings: 163840,
  model_type: 'deepseek_v2',
  moe_intermediate_size: 1408,
  moe_layer_freq: 1,
  n_group: 1,
  n_routed_experts: 64,
  n_shared_experts: 2,
  norm_topk_prob: false,
  num_attention_heads: 16,
  num_experts_per_tok: 6,
  num_hidden_layers: 27,
  num_key_value_heads: 16,
  pretraining_tp: 1,
  q_lora_rank: null,
  qk_nope_head_dim: 128,
  qk_rope_head_dim: 64,
  rms_norm_eps: 1e-6,
  rope_scaling: { beta_fast: 32, beta_slow: 1, factor: 40, mscale: 0.707, mscale_all_dim: 0.707, original_max_position_embeddings: 4096, type: 'yarn' },
  rope_theta: 10000,
  routed_scaling_factor: 1.0,
  scoring_func: 'softmax',
  seq_aux: true,
  tie_word_embeddings: false,
  topk_group: 1,
  topk_method: 'greedy',
  torch_dtype: 'bfloat16',
  use_cache: true,
  v_head_dim: 128,
  vocab_size: 102400,
  ...o,
});

/** DeepSeek-V3's published shapes (deepseek-ai/DeepSeek-V3), as a bf16 checkpoint. */
const v3 = (o: Record<string, unknown> = {}): Record<string, unknown> => ({
  ...v2Lite(),
  architectures: ['DeepseekV3ForCausalLM'],
  model_type: 'deepseek_v3',
  bos_token_id: 0,
  eos_token_id: 1,
  first_k_dense_replace: 3,
  hidden_size: 7168,
  intermediate_size: 18432,
  moe_intermediate_size: 2048,
  n_group: 8,
  n_routed_experts: 256,
  n_shared_experts: 1,
  norm_topk_prob: true,
  num_attention_heads: 128,
  num_experts_per_tok: 8,
  num_hidden_layers: 61,
  num_key_value_heads: 128,
  num_nextn_predict_layers: 1,
  q_lora_rank: 1536,
  rope_scaling: { beta_fast: 32, beta_slow: 1, factor: 40, mscale: 1.0, mscale_all_dim: 1.0, original_max_position_embeddings: 4096, type: 'yarn' },
  routed_scaling_factor: 2.5,
  scoring_func: 'sigmoid',
  topk_group: 4,
  topk_method: 'noaux_tc',
  vocab_size: 129280,
  ...o,
});

describe('DeepSeek configs', () => {
  it('reads DeepSeek-V2-Lite: MLA without q_lora, softmax greedy, 64 + 2 shared experts, layer 0 dense, yarn softmax scale', () => {
    const c = parse(v2Lite());
    expect(c).toMatchObject({
      arch: 'deepseek_v2',
      numLayers: 27,
      hiddenSize: 2048,
      numHeads: 16,
      numKvHeads: 1,
      headDim: 64,
      qkNorm: false,
      numExperts: 64,
      numExpertsPerTok: 6,
      moeIntermediateSize: 1408,
      normTopkProb: false,
      vocabSize: 102400,
      mla: { qLoraRank: 0, kvLoraRank: 512, qkNopeHeadDim: 128, qkRopeHeadDim: 64, vHeadDim: 128, ropeInterleave: true },
      routing: { scoringFunc: 'softmax', topkMethod: 'greedy', nGroup: 1, topkGroup: 1, routedScalingFactor: 1, scoreCorrectionBias: false, numSharedExperts: 2, sharedIntermediateSize: 2816 },
    });
    expect(c.layers).toEqual([{ attention: 'mla', ffn: 'dense' }, ...new Array(26).fill({ attention: 'mla', ffn: 'moe+shared' })]);
    // mscale == mscale_all_dim: cos/sin unscaled, softmax scale x mscale(40, 0.707)^2.
    expect(c.ropeScaling).toMatchObject({ type: 'yarn', factor: 40, originalMaxPositionEmbeddings: 4096, attentionFactor: 1 });
    expect(c.mla!.softmaxScale).toBeCloseTo(192 ** -0.5 * yarnMscale(40, 0.707) ** 2, 12);
  });

  it('reads DeepSeek-V3: q_lora 1536, noaux_tc sigmoid over 8 groups keeping 4, score bias, 3 dense layers', () => {
    const c = parse(v3());
    expect(c).toMatchObject({
      arch: 'deepseek_v3',
      numLayers: 61,
      hiddenSize: 7168,
      numHeads: 128,
      numExperts: 256,
      numExpertsPerTok: 8,
      normTopkProb: true,
      mla: { qLoraRank: 1536, kvLoraRank: 512 },
      routing: { scoringFunc: 'sigmoid', topkMethod: 'noaux_tc', nGroup: 8, topkGroup: 4, routedScalingFactor: 2.5, scoreCorrectionBias: true, numSharedExperts: 1 },
    });
    expect(c.layers.slice(0, 4).map((l) => l.ffn)).toEqual(['dense', 'dense', 'dense', 'moe+shared']);
    expect(c.mla!.softmaxScale).toBeCloseTo(192 ** -0.5 * yarnMscale(40, 1) ** 2, 12);
  });

  it('applies transformers defaults per generation and honours moe_layer_freq and rope_interleave', () => {
    const bare = (o: Record<string, unknown>) => {
      const c = v3(o);
      for (const k of ['topk_method', 'scoring_func', 'norm_topk_prob', 'routed_scaling_factor', 'first_k_dense_replace', 'rope_scaling']) delete c[k];
      return c;
    };
    expect(parse(bare({}))).toMatchObject({ normTopkProb: true, routing: { scoringFunc: 'sigmoid', topkMethod: 'noaux_tc', routedScalingFactor: 2.5 } });
    expect(parse(bare({})).layers.slice(0, 4).map((l) => l.ffn)).toEqual(['dense', 'dense', 'dense', 'moe+shared']);
    const v2 = parse(v2Lite({ topk_method: undefined, scoring_func: undefined, norm_topk_prob: undefined, moe_layer_freq: 2, rope_scaling: null }));
    expect(v2).toMatchObject({ normTopkProb: false, routing: { scoringFunc: 'softmax', topkMethod: 'greedy' } });
    expect(v2.layers.slice(0, 5).map((l) => l.ffn)).toEqual(['dense', 'dense', 'moe+shared', 'dense', 'moe+shared']);
    expect(parse(v2Lite({ n_shared_experts: 0 })).layers[1]).toEqual({ attention: 'mla', ffn: 'moe' });
    expect(v2.mla!.softmaxScale).toBeCloseTo(192 ** -0.5, 12);
    expect(parse(v3({ rope_interleave: false })).mla!.ropeInterleave).toBe(false);
    // V2 has no rope_interleave: its RoPE is always interleaved.
    expect(parse(v2Lite({ rope_interleave: false })).mla!.ropeInterleave).toBe(true);
  });

  it('refuses a partial or bad DeepSeek config, naming the field', () => {
    for (const f of ['kv_lora_rank', 'q_lora_rank', 'qk_nope_head_dim', 'qk_rope_head_dim', 'v_head_dim']) {
      expect(() => parse(v2Lite({ [f]: undefined })), f).toThrow(new RegExp(`${f} is missing`));
    }
    expect(() => parse(v2Lite({ kv_lora_rank: 0 }))).toThrow(/kv_lora_rank is 0/);
    expect(() => parse(v3({ topk_group: 9 }))).toThrow(/topk_group 9 exceeds n_group 8/);
    expect(() => parse(v3({ n_group: 7 }))).toThrow(/n_group 7 does not divide the 256 routed experts/);
    expect(() => parse(v3({ topk_group: undefined }))).toThrow(/topk_group is missing: topk_method noaux_tc/);
    expect(() => parse(v3({ topk_method: 'top1' }))).toThrow(/topk_method/);
    expect(() => parse(v3({ scoring_func: 'relu' }))).toThrow(/scoring_func/);
    expect(() => parse(v2Lite({ qk_rope_head_dim: 63 }))).toThrow(/qk_rope_head_dim 63 must be even/);
    expect(() => parse(v2Lite({ num_experts_per_tok: 65 }))).toThrow(/num_experts_per_tok 65 exceeds the 64 routed experts/);
    expect(() => parse(v2Lite({ attention_bias: true }))).toThrow(/attention_bias/);
    expect(() => parse(v2Lite({ first_k_dense_replace: 28 }))).toThrow(/first_k_dense_replace 28 exceeds num_hidden_layers 27/);
    // The published V3 weights are fp8: refused by name, not loaded as garbage.
    expect(() => parse(v3({ quantization_config: { quant_method: 'fp8', fmt: 'e4m3' } }))).toThrow(/quantization_config \(fp8\) is not supported/);
  });

  it('lists the MLA tensors and puts the score bias with the gate, shared experts on the FFN role', () => {
    const c = parse(v3({ num_hidden_layers: 4 }));
    const names = modelTensors(c).map((t) => t.name);
    expect(names).toContain('model.layers.0.self_attn.q_a_layernorm.weight');
    expect(names).toContain('model.layers.3.mlp.shared_experts.down_proj.weight');
    expect(names).not.toContain('model.layers.0.self_attn.q_proj.weight');
    expect(modelTensors(c).find((t) => t.name === 'model.layers.3.self_attn.kv_b_proj.weight')!.shape).toEqual([128 * 256, 512]);
    expect(modelTensors(c).find((t) => t.name === 'model.layers.3.self_attn.kv_a_proj_with_mqa.weight')!.shape).toEqual([576, 7168]);
    const bias = 'model.layers.3.mlp.gate.e_score_correction_bias';
    const has = (role: 'attention' | 'ffn', gate: boolean) => roleTensors(c, role, gate).some((t) => t.name === bias);
    expect([has('attention', true), has('ffn', true), has('attention', false), has('ffn', false)]).toEqual([true, false, false, true]);
    expect(roleTensors(c, 'attention', true).some((t) => t.name.includes('shared_experts'))).toBe(false);
    const lite = parse(v2Lite({ num_hidden_layers: 2 }));
    expect(modelTensors(lite).map((t) => t.name)).toContain('model.layers.0.self_attn.q_proj.weight');
    expect(modelTensors(lite).some((t) => t.name.endsWith('e_score_correction_bias'))).toBe(false);
  });
});

describe('unsupported architectures', () => {
  it('names the architecture before any missing field, also when it nests a text_config', () => {
    const qwen3vl = {
      architectures: ['Qwen3VLMoeForConditionalGeneration'],
      model_type: 'qwen3_vl_moe',
      text_config: { model_type: 'qwen3_vl_moe_text', hidden_size: 2048, num_hidden_layers: 48 },
      vision_config: { depth: 27 },
    };
    expect(() => parse(qwen3vl)).toThrow(/architecture Qwen3VLMoeForConditionalGeneration \(its text_config is qwen3_vl_moe_text\) is not supported \(supported: .*DeepseekV3ForCausalLM/);
    expect(() => parse({ architectures: ['GPT2LMHeadModel'] })).toThrow(/architecture GPT2LMHeadModel is not supported/);
    expect(() => parse({ hidden_size: 8 })).toThrow(/architectures/);
  });
});
