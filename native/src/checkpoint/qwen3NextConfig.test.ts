import { describe, expect, it } from 'vitest';
import { tinyHybridConfigs } from '../testing/engineTesting.js';
import { parseModelConfig } from './config.js';
import { modelTensors, roleTensors } from './tensorTables.js';

const parse = (c: Record<string, unknown>) => parseModelConfig('/m/config.json', c);

/** A Qwen3-Next config with only what transformers has no default for (the base fields every family needs). */
const nextMinimal = (o: Record<string, unknown> = {}) => ({
  architectures: ['Qwen3NextForCausalLM'],
  vocab_size: 100,
  hidden_size: 32,
  num_hidden_layers: 8,
  num_attention_heads: 4,
  ...o,
});

/** A Qwen3.5-MoE vision-language config around a text config. */
const qwen35 = (text: Record<string, unknown> = {}, top: Record<string, unknown> = {}) => ({
  architectures: ['Qwen3_5MoeForConditionalGeneration'],
  model_type: 'qwen3_5_moe',
  ...top,
  text_config: { model_type: 'qwen3_5_moe_text', vocab_size: 90, hidden_size: 24, num_hidden_layers: 4, num_attention_heads: 2, ...text },
});

const kindsOf = (c: ReturnType<typeof parse>) => c.layers.map((l) => `${l.attention} ${l.ffn}`);

describe('Qwen3-Next configs', () => {
  it("applies transformers' defaults: layer_types from full_attention_interval 4, GDN 16/32 heads of 128, conv 4, 512 experts top-10, shared 512, partial RoPE 1/4, (1 + weight) norms", () => {
    const c = parse(nextMinimal());
    expect(c).toMatchObject({
      arch: 'qwen3_next',
      numKvHeads: 2,
      headDim: 256,
      rotaryDim: 64,
      qkNorm: true,
      attentionBias: false,
      normUnitOffset: true,
      visionTowerIgnored: false,
      numExperts: 512,
      numExpertsPerTok: 10,
      moeIntermediateSize: 512,
      normTopkProb: true,
      routing: null,
      gatedSharedExpert: { intermediateSize: 512 },
      intermediateSize: 5632,
      gdn: { numKeyHeads: 16, numValueHeads: 32, keyHeadDim: 128, valueHeadDim: 128, convKernel: 4, projLayout: 'grouped' },
      ropeTheta: 10000,
      rmsNormEps: 1e-6,
      maxPositionEmbeddings: 32768,
    });
    expect(c.layers.map((l) => l.attention)).toEqual(['gdn', 'gdn', 'gdn', 'gqa_gated', 'gdn', 'gdn', 'gdn', 'gqa_gated']);
    expect(new Set(c.layers.map((l) => l.ffn))).toEqual(new Set(['moe+gated_shared']));
  });

  it('derives layer_types from full_attention_interval, or takes them as given, and refuses bad ones', () => {
    expect(parse(nextMinimal({ num_hidden_layers: 6, full_attention_interval: 3 })).layers.map((l) => l.attention)).toEqual(['gdn', 'gdn', 'gqa_gated', 'gdn', 'gdn', 'gqa_gated']);
    const types = ['full_attention', 'linear_attention', 'full_attention', 'linear_attention'];
    expect(parse(nextMinimal({ num_hidden_layers: 4, layer_types: types })).layers.map((l) => l.attention)).toEqual(['gqa_gated', 'gdn', 'gqa_gated', 'gdn']);
    // transformers' legacy names: mamba = linear_attention, attention = full_attention.
    expect(parse(nextMinimal({ num_hidden_layers: 2, layer_types: ['mamba', 'attention'] })).layers.map((l) => l.attention)).toEqual(['gdn', 'gqa_gated']);
    expect(() => parse(nextMinimal({ num_hidden_layers: 4, layer_types: types.slice(1) }))).toThrow(/layer_types has 3 entries but num_hidden_layers is 4/);
    expect(() => parse(nextMinimal({ num_hidden_layers: 2, layer_types: ['linear_attention', 'sliding_attention'] }))).toThrow(/layer_types\[1\] is "sliding_attention" \(supported: linear_attention, full_attention\)/);
  });

  it('reads decoder_sparse_step and mlp_only_layers as transformers does (dense MLP of intermediate_size elsewhere)', () => {
    const c = parse(nextMinimal({ num_hidden_layers: 4, decoder_sparse_step: 2, mlp_only_layers: [3], intermediate_size: 40, norm_topk_prob: false }));
    expect(c.layers.map((l) => l.ffn)).toEqual(['dense', 'moe+gated_shared', 'dense', 'dense']);
    expect(c).toMatchObject({ intermediateSize: 40, normTopkProb: false });
    const dense = parse(nextMinimal({ num_experts: 0 }));
    expect(new Set(dense.layers.map((l) => l.ffn))).toEqual(new Set(['dense']));
    expect(dense).toMatchObject({ numExperts: 0, numExpertsPerTok: 0, gatedSharedExpert: null });
  });

  it('reads partial_rotary_factor at the top (transformers 4) or in rope_parameters (transformers 5, maybe keyed by layer type)', () => {
    expect(parse(nextMinimal({ head_dim: 16, partial_rotary_factor: 0.5, rope_theta: 1e7 }))).toMatchObject({ rotaryDim: 8, ropeTheta: 1e7 });
    expect(parse(nextMinimal({ head_dim: 16, rope_parameters: { rope_type: 'default', rope_theta: 5e6, partial_rotary_factor: 0.75 } }))).toMatchObject({ rotaryDim: 12, ropeTheta: 5e6 });
    const keyed = { full_attention: { rope_type: 'default', rope_theta: 2e6, partial_rotary_factor: 1 } };
    expect(parse(nextMinimal({ head_dim: 16, rope_parameters: keyed }))).toMatchObject({ rotaryDim: 16, ropeTheta: 2e6 });
    expect(() => parse(nextMinimal({ head_dim: 10, partial_rotary_factor: 0.5 }))).toThrow(/head_dim 10 x partial_rotary_factor gives 5 rotary dims; RoPE needs an even number/);
    expect(() => parse(nextMinimal({ partial_rotary_factor: 1.5 }))).toThrow(/partial_rotary_factor/);
  });

  it('refuses linear heads that do not group and dense layers without intermediate_size', () => {
    expect(() => parse(nextMinimal({ linear_num_key_heads: 3, linear_num_value_heads: 4 }))).toThrow(/linear_num_value_heads 4 is not a multiple of linear_num_key_heads 3/);
    const qwen35Dense = qwen35({ num_experts: 0 });
    expect(() => parse(qwen35Dense)).toThrow(/num_experts is 0: every Qwen3.5-MoE layer is a MoE layer/);
  });

  it('names and shapes every Qwen3-Next tensor: grouped in_proj_qkvz / ba, conv1d [C, 1, K], q_proj with the gate, one shared expert and its gate', () => {
    const c = parse(tinyHybridConfigs['qwen3_next']!);
    const t = new Map(modelTensors(c).map((x) => [x.name, x]));
    // Hk 2 x Dk 6 = 12 key dims, Hv 4 x Dv 5 = 20 value dims, hidden 24.
    expect(t.get('model.layers.0.linear_attn.in_proj_qkvz.weight')).toMatchObject({ slot: 'attn.in_proj_qkvz', shape: [2 * 12 + 2 * 20, 24], owner: 'attention' });
    expect(t.get('model.layers.0.linear_attn.in_proj_ba.weight')?.shape).toEqual([8, 24]);
    expect(t.get('model.layers.0.linear_attn.conv1d.weight')?.shape).toEqual([2 * 12 + 20, 1, 3]);
    expect(t.get('model.layers.0.linear_attn.dt_bias')?.shape).toEqual([4]);
    expect(t.get('model.layers.0.linear_attn.A_log')).toMatchObject({ slot: 'attn.a_log', shape: [4] });
    expect(t.get('model.layers.0.linear_attn.norm.weight')).toMatchObject({ slot: 'attn.gated_norm', shape: [5] });
    expect(t.get('model.layers.0.linear_attn.out_proj.weight')?.shape).toEqual([24, 20]);
    expect(t.has('model.layers.0.self_attn.q_proj.weight')).toBe(false);
    // Gated attention: 4 heads of 8, query and gate -> 64 rows; o_proj takes 32.
    expect(t.get('model.layers.1.self_attn.q_proj.weight')).toMatchObject({ slot: 'attn.q_proj', shape: [64, 24] });
    expect(t.get('model.layers.1.self_attn.k_proj.weight')?.shape).toEqual([16, 24]);
    expect(t.get('model.layers.1.self_attn.o_proj.weight')?.shape).toEqual([24, 32]);
    expect(t.get('model.layers.1.self_attn.q_norm.weight')?.shape).toEqual([8]);
    expect(t.has('model.layers.1.linear_attn.conv1d.weight')).toBe(false);
    expect(t.get('model.layers.1.mlp.gate.weight')).toMatchObject({ slot: 'ffn.router', shape: [5, 24], owner: 'router' });
    expect(t.get('model.layers.1.mlp.experts.4.down_proj.weight')).toMatchObject({ slot: 'ffn.experts.down_proj', expert: 4, shape: [24, 7] });
    expect(t.get('model.layers.1.mlp.shared_expert.up_proj.weight')).toMatchObject({ slot: 'ffn.shared.up_proj', shape: [9, 24], owner: 'ffn' });
    expect(t.get('model.layers.1.mlp.shared_expert_gate.weight')).toMatchObject({ slot: 'ffn.shared_expert_gate', shape: [1, 24], owner: 'ffn' });
    // Layer 2 is mlp-only: a dense MLP of intermediate_size 11.
    expect(t.get('model.layers.2.mlp.gate_proj.weight')?.shape).toEqual([11, 24]);
    expect(t.has('model.layers.2.mlp.shared_expert_gate.weight')).toBe(false);
    expect(t.get('lm_head.weight')?.shape).toEqual([43, 24]);
    // The roles split as for every family: attention holds the GDN and attention tensors, FFN the MLPs.
    const ffn = roleTensors(c, 'ffn', false).map((x) => x.name);
    expect(ffn).toContain('model.layers.3.mlp.shared_expert_gate.weight');
    expect(ffn.some((n) => n.includes('linear_attn'))).toBe(false);
  });
});

describe('Qwen3.5-MoE configs', () => {
  it('reads the text_config of the vision-language checkpoint and ignores the vision tower', () => {
    const c = parse(tinyHybridConfigs['qwen3_5_moe']!);
    expect(c).toMatchObject({
      arch: 'qwen3_5_moe',
      hfArchitecture: 'Qwen3_5MoeForConditionalGeneration',
      vocabSize: 41,
      hiddenSize: 20,
      numLayers: 3,
      numHeads: 2,
      numKvHeads: 1,
      headDim: 12,
      rotaryDim: 6,
      ropeTheta: 1000,
      tieWordEmbeddings: true,
      visionTowerIgnored: true,
      normUnitOffset: true,
      numExperts: 6,
      numExpertsPerTok: 3,
      normTopkProb: true,
      intermediateSize: 0,
      gatedSharedExpert: { intermediateSize: 7 },
      gdn: { numKeyHeads: 1, numValueHeads: 3, keyHeadDim: 4, valueHeadDim: 6, convKernel: 4, projLayout: 'split' },
    });
    expect(kindsOf(c)).toEqual(['gdn moe+gated_shared', 'gqa_gated moe+gated_shared', 'gdn moe+gated_shared']);
  });

  it("applies its own defaults (256 experts top-8, every layer MoE, top-k always renormalised) and ignores the Qwen3-Next keys it deleted", () => {
    const c = parse(qwen35({ intermediate_size: 512, norm_topk_prob: false, mlp_only_layers: [0], decoder_sparse_step: 2 }));
    expect(c).toMatchObject({ numExperts: 256, numExpertsPerTok: 8, normTopkProb: true, visionTowerIgnored: false, tieWordEmbeddings: false });
    expect(c.layers.map((l) => l.ffn)).toEqual(new Array(4).fill('moe+gated_shared'));
    expect(c.layers.map((l) => l.attention)).toEqual(['gdn', 'gdn', 'gdn', 'gqa_gated']);
  });

  it('takes tie_word_embeddings and torch_dtype from the top level where the text config lacks them', () => {
    expect(parse(qwen35({}, { tie_word_embeddings: true, torch_dtype: 'float16' }))).toMatchObject({ tieWordEmbeddings: true, weightDtype: 'f16' });
    expect(parse(qwen35({ dtype: 'float32' }, { torch_dtype: 'float16' }))).toMatchObject({ weightDtype: 'f32' });
  });

  it('refuses a vision-language config without text_config, naming it', () => {
    expect(() => parse({ architectures: ['Qwen3_5MoeForConditionalGeneration'], vision_config: {} })).toThrow(/keeps the language model in text_config, which is missing/);
  });

  it('names the tensors under model.language_model. in the split layout (in_proj_qkv / z / b / a); the text-only class under model.', () => {
    const c = parse(tinyHybridConfigs['qwen3_5_moe']!);
    const t = new Map(modelTensors(c).map((x) => [x.name, x]));
    // Hk 1 x Dk 4 = 4 key dims, Hv 3 x Dv 6 = 18 value dims, hidden 20.
    expect(t.get('model.language_model.layers.0.linear_attn.in_proj_qkv.weight')?.shape).toEqual([2 * 4 + 18, 20]);
    expect(t.get('model.language_model.layers.0.linear_attn.in_proj_z.weight')?.shape).toEqual([18, 20]);
    expect(t.get('model.language_model.layers.0.linear_attn.in_proj_b.weight')?.shape).toEqual([3, 20]);
    expect(t.get('model.language_model.layers.0.linear_attn.in_proj_a.weight')?.shape).toEqual([3, 20]);
    expect(t.get('model.language_model.layers.0.linear_attn.conv1d.weight')?.shape).toEqual([26, 1, 4]);
    expect(t.has('model.language_model.layers.0.linear_attn.in_proj_qkvz.weight')).toBe(false);
    expect(t.get('model.language_model.layers.1.self_attn.q_proj.weight')?.shape).toEqual([2 * 2 * 12, 20]);
    expect(t.get('model.language_model.embed_tokens.weight')?.shape).toEqual([41, 20]);
    expect(t.get('model.language_model.norm.weight')?.shape).toEqual([20]);
    expect(t.has('lm_head.weight')).toBe(false); // tied
    expect([...t.keys()].some((n) => n.startsWith('model.visual'))).toBe(false);
    const textOnly = parse({ architectures: ['Qwen3_5MoeForCausalLM'], vocab_size: 90, hidden_size: 24, num_hidden_layers: 4, num_attention_heads: 2 });
    expect(textOnly).toMatchObject({ arch: 'qwen3_5_moe', visionTowerIgnored: false });
    expect(modelTensors(textOnly).map((x) => x.name)).toContain('model.layers.3.mlp.shared_expert_gate.weight');
  });
});
