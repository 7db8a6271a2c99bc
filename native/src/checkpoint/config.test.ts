import { describe, expect, it } from 'vitest';
import { parseModelConfig, supportedArchitectures } from './config.js';
import { tinyQwen3MoeConfig } from '../testing/checkpointTesting.js';

const parse = (c: Record<string, unknown>, gen?: unknown) => parseModelConfig('/m/config.json', c, gen);

const llama = (o: Record<string, unknown> = {}) => ({
  architectures: ['LlamaForCausalLM'],
  vocab_size: 100,
  hidden_size: 48,
  intermediate_size: 80,
  num_hidden_layers: 2,
  num_attention_heads: 6,
  num_key_value_heads: 2,
  ...o,
});

describe('parseModelConfig', () => {
  it('reads Qwen3-MoE: GQA, q/k norm, experts, norm_topk_prob, mlp_only_layers', () => {
    const c = parse(tinyQwen3MoeConfig());
    expect(c).toMatchObject({
      arch: 'qwen3_moe',
      hfArchitecture: 'Qwen3MoeForCausalLM',
      numHeads: 4,
      numKvHeads: 2,
      headDim: 8,
      qkNorm: true,
      attentionBias: false,
      numExperts: 6,
      numExpertsPerTok: 2,
      moeIntermediateSize: 16,
      intermediateSize: 40,
      normTopkProb: true,
      layers: [
        { attention: 'gqa', ffn: 'moe' },
        { attention: 'gqa', ffn: 'dense' },
        { attention: 'gqa', ffn: 'moe' },
      ],
      eosTokenIds: [2],
      ropeTheta: 10000,
    });
    expect(c.ropeScaling.type).toBe('default');
  });

  it('accepts num_local_experts (transformers 5 saves Qwen3-MoE that way) and needs one of them', () => {
    expect(parse(tinyQwen3MoeConfig({ num_experts: undefined, num_local_experts: 10 })).numExperts).toBe(10);
    expect(() => parse(tinyQwen3MoeConfig({ num_experts: undefined }))).toThrow(/num_experts is missing/);
  });

  it('applies decoder_sparse_step and defaults norm_topk_prob to false', () => {
    const c = parse(tinyQwen3MoeConfig({ decoder_sparse_step: 2, mlp_only_layers: [], norm_topk_prob: undefined, num_hidden_layers: 4 }));
    expect(c.layers.map((l) => l.ffn)).toEqual(['dense', 'moe', 'dense', 'moe']);
    expect(c.normTopkProb).toBe(false);
  });

  it('rejects mlp_only_layers outside the model and top-k above the expert count', () => {
    expect(() => parse(tinyQwen3MoeConfig({ mlp_only_layers: [3] }))).toThrow(/mlp_only_layers entry 3 is not a layer index/);
    expect(() => parse(tinyQwen3MoeConfig({ num_experts_per_tok: 7 }))).toThrow(/num_experts_per_tok 7 exceeds the 6 experts/);
  });

  it('reads dense Qwen3 with transformers defaults (head_dim 128 when absent)', () => {
    const c = parse({ ...llama(), architectures: ['Qwen3ForCausalLM'], hidden_size: 64 });
    expect(c).toMatchObject({ arch: 'qwen3', headDim: 128, qkNorm: true, numExperts: 0, rmsNormEps: 1e-6 });
    expect(c.layers).toEqual([
      { attention: 'gqa', ffn: 'dense' },
      { attention: 'gqa', ffn: 'dense' },
    ]);
  });

  it('reads Llama: head_dim from hidden/heads, attention_bias, tie_word_embeddings', () => {
    const c = parse(llama({ attention_bias: true, tie_word_embeddings: true, rms_norm_eps: 1e-5 }));
    expect(c).toMatchObject({ arch: 'llama', headDim: 8, qkNorm: false, attentionBias: true, tieWordEmbeddings: true, rmsNormEps: 1e-5, maxPositionEmbeddings: 2048 });
    expect(parse(llama({ num_key_value_heads: undefined })).numKvHeads).toBe(6);
  });

  it('reads llama3 rope scaling', () => {
    const c = parse(llama({ rope_theta: 500000, rope_scaling: { rope_type: 'llama3', factor: 8, low_freq_factor: 1, high_freq_factor: 4, original_max_position_embeddings: 64 } }));
    expect(c.ropeTheta).toBe(500000);
    expect(c.ropeScaling).toMatchObject({ type: 'llama3', factor: 8, lowFreqFactor: 1, highFreqFactor: 4, originalMaxPositionEmbeddings: 64 });
    expect(() => parse(llama({ rope_scaling: { rope_type: 'llama3', factor: 8 } }))).toThrow(/llama3 scaling needs "low_freq_factor"/);
  });

  it('reads linear and dynamic scaling (old "type" key too)', () => {
    expect(parse(llama({ rope_scaling: { type: 'linear', factor: 2 } })).ropeScaling).toMatchObject({ type: 'linear', factor: 2 });
    expect(parse(llama({ max_position_embeddings: 4096, rope_scaling: { rope_type: 'dynamic', factor: 4 } })).ropeScaling).toMatchObject({
      type: 'dynamic',
      factor: 4,
      originalMaxPositionEmbeddings: 4096,
    });
  });

  it('reads yarn with its attention factor', () => {
    const c = parse(llama({ max_position_embeddings: 1024, rope_scaling: { rope_type: 'yarn', factor: 4, original_max_position_embeddings: 256 } }));
    expect(c.ropeScaling).toMatchObject({ type: 'yarn', factor: 4, originalMaxPositionEmbeddings: 256, betaFast: 32, betaSlow: 1 });
    expect(c.ropeScaling.attentionFactor).toBeCloseTo(0.1 * Math.log(4) + 1, 12);
    const explicit = parse(llama({ rope_scaling: { rope_type: 'yarn', factor: 4, attention_factor: 1.5, beta_fast: 16 } }));
    expect(explicit.ropeScaling).toMatchObject({ attentionFactor: 1.5, betaFast: 16 });
  });

  it('reads the transformers 5 rope_parameters layout', () => {
    const c = parse(llama({ rope_parameters: { rope_type: 'linear', rope_theta: 1e6, factor: 2 } }));
    expect(c.ropeTheta).toBe(1e6);
    expect(c.ropeScaling).toMatchObject({ type: 'linear', factor: 2 });
    expect(parse(llama({ rope_parameters: { rope_type: 'default', rope_theta: 5e5 } })).ropeTheta).toBe(5e5);
  });

  it('rejects unsupported rope types', () => {
    expect(() => parse(llama({ rope_scaling: { rope_type: 'longrope', factor: 2 } }))).toThrow(/rope type "longrope" is not supported \(supported: default, linear, llama3, yarn, dynamic\)/);
  });

  it('reads Mixtral: num_local_experts, always-renormalised top-k, no attention bias', () => {
    const c = parse({ ...llama(), architectures: ['MixtralForCausalLM'], num_local_experts: 10, num_experts_per_tok: 2, attention_bias: true });
    expect(c).toMatchObject({ arch: 'mixtral', numExperts: 10, numExpertsPerTok: 2, moeIntermediateSize: 80, normTopkProb: true, attentionBias: false, ropeTheta: 1e6, rmsNormEps: 1e-5 });
    expect(c.layers.map((l) => l.ffn)).toEqual(['moe', 'moe']);
    expect(() => parse({ ...llama(), architectures: ['MixtralForCausalLM'], sliding_window: 4096 })).toThrow(/sliding-window attention is not supported/);
  });

  it('rejects an unsupported architecture with the list of supported ones', () => {
    expect(() => parse(llama({ architectures: ['GPT2LMHeadModel'] }))).toThrow(
      `/m/config.json: architecture GPT2LMHeadModel is not supported (supported: ${supportedArchitectures.join(', ')})`,
    );
  });

  it('names invalid and missing fields', () => {
    expect(() => parse(llama({ hidden_size: '48' }))).toThrow(/invalid config: hidden_size: /);
    expect(() => parse(llama({ num_hidden_layers: undefined }))).toThrow(/num_hidden_layers/);
    expect(() => parse(llama({ architectures: [] }))).toThrow(/architectures: needs at least one entry/);
  });

  it('rejects features the engine does not implement', () => {
    expect(() => parse(llama({ hidden_act: 'gelu' }))).toThrow(/hidden_act gelu is not supported/);
    expect(() => parse({ ...tinyQwen3MoeConfig(), use_sliding_window: true })).toThrow(/use_sliding_window is true/);
    expect(() => parse(llama({ num_key_value_heads: 4 }))).toThrow(/num_attention_heads 6 is not a multiple of num_key_value_heads 4/);
    expect(() => parse(llama({ hidden_size: 50 }))).toThrow(/hidden_size 50 is not divisible by num_attention_heads 6/);
  });

  it('merges eos ids from generation_config.json and checks them against the vocabulary', () => {
    expect(parse(llama({ eos_token_id: [5, 6], bos_token_id: 1 }), { eos_token_id: [6, 7] })).toMatchObject({ eosTokenIds: [5, 6, 7], bosTokenId: 1 });
    expect(() => parse(llama({ eos_token_id: 100 }))).toThrow(/eos_token_id 100 is outside the vocabulary/);
  });
});
