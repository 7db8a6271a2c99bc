import { describe, expect, it } from 'vitest';
import type { CardSpec } from './cards.js';
import { modelFromConfig, modelPreset } from './modelShape.js';
import { attentionParams, attentionRoleParams, attentionStepMs, fullAttentionLayers, kvBytesPerToken, linearAttentionParams, linearStateBytes, modelParams, rooflineMemory } from './roofline.js';

// A card of round numbers (1 TB/s, 1 PFLOP/s) and ideal factors: the roofline is closed form.
const card: CardSpec = { name: 'toy', label: 'Toy', memoryBytesPerS: 1e12, memoryGB: 1, bf16Flops: 1e15, nvlinkBytesPerS: 0, source: 'test' };
const ideal = { bandwidthEfficiency: 1, computeEfficiency: 1, launchMsPerLayer: 0 };

/** A tiny hybrid: 4 layers (3 linear, 1 full), hidden 64, GDN Hk 2 / Hv 4, Dk 16 / Dv 12, conv 4. */
const tinyHybrid = {
  model_type: 'qwen3_next',
  num_hidden_layers: 4,
  hidden_size: 64,
  num_attention_heads: 4,
  num_key_value_heads: 2,
  head_dim: 16,
  layer_types: ['linear_attention', 'linear_attention', 'linear_attention', 'full_attention'],
  linear_num_key_heads: 2,
  linear_num_value_heads: 4,
  linear_key_head_dim: 16,
  linear_value_head_dim: 12,
  linear_conv_kernel_dim: 4,
  num_experts: 8,
  num_experts_per_tok: 2,
  moe_intermediate_size: 24,
  shared_expert_intermediate_size: 40,
  vocab_size: 1000,
  torch_dtype: 'bfloat16',
};

describe('hybrid (Gated DeltaNet) model shapes', () => {
  it('reads the linear layers from layer_types, or every full_attention_interval-th layer full (default 4)', () => {
    const m = modelFromConfig(tinyHybrid);
    expect(m.linear).toEqual({ layers: 3, numKeyHeads: 2, numValueHeads: 4, keyHeadDim: 16, valueHeadDim: 12, convKernel: 4 });
    expect(m).toMatchObject({ attentionOutputGate: true, sharedIntermediate: 40, denseLayers: 0, experts: 8 });
    const { layer_types: _types, ...noTypes } = tinyHybrid;
    expect(modelFromConfig({ ...noTypes, num_hidden_layers: 12, full_attention_interval: 3 }).linear?.layers).toBe(8);
    expect(modelFromConfig({ ...noTypes, num_hidden_layers: 48 }).linear?.layers).toBe(36);
    expect(() => modelFromConfig({ ...tinyHybrid, num_hidden_layers: 5 })).toThrow(/layer_types has 4 entries for 5 layers/);
    // Not hybrid: no linear layers, no output gate.
    expect(modelPreset('qwen3-30b-a3b').linear).toBeUndefined();
  });

  it('reads a vision-language config through its text_config (Qwen3.5-MoE), which used to fail on num_hidden_layers', () => {
    const m = modelPreset('qwen3.5-35b-a3b');
    expect(m).toMatchObject({ name: 'qwen3.5-35b-a3b', numLayers: 40, hiddenSize: 2048, experts: 256, topK: 8, sharedIntermediate: 512, denseLayers: 0, vocabSize: 248320, bytesPerElement: 2 });
    expect(m.linear).toMatchObject({ layers: 30, numValueHeads: 32 });
    expect(modelPreset('qwen3-next-80b-a3b')).toMatchObject({ numLayers: 48, experts: 512, topK: 10, linear: { layers: 36 } });
  });

  it('counts the weights of both layer kinds: the gated q_proj is twice as wide, GDN projections, conv and out_proj', () => {
    const m = modelFromConfig(tinyHybrid);
    // Full: q 64 x 128 (query + gate), k, v 64 x 32 each, o 64 x 64.
    expect(attentionParams(m)).toBe(64 * 128 + 2 * 64 * 32 + 64 * 64);
    // GDN: key 32, value 48: in_proj 64 x (64 + 96 + 8), conv (64 + 48) x 4, out_proj 48 x 64.
    expect(linearAttentionParams(m)).toBe(64 * (2 * 32 + 2 * 48 + 8) + (2 * 32 + 48) * 4 + 48 * 64);
    expect(attentionRoleParams(m)).toBe(attentionParams(m) + 3 * linearAttentionParams(m) + 2 * 1000 * 64);
    // Qwen3-Next-80B-A3B: about 80B parameters.
    const next = modelPreset('qwen3-next-80b-a3b');
    expect(modelParams(next) / 1e9).toBeGreaterThan(79);
    expect(modelParams(next) / 1e9).toBeLessThan(82);
  });

  it('caches KV only in full-attention layers; linear layers keep a state per sequence and cost no more with context', () => {
    const m = modelFromConfig(tinyHybrid);
    expect(fullAttentionLayers(m)).toBe(1);
    expect(rooflineMemory(m).kvBytesPerToken).toBe(1 * kvBytesPerToken(m));
    // State: [4, 16, 12] in f32 + 3 conv inputs of 112 channels in bf16.
    expect(linearStateBytes(m)).toBe(4 * 16 * 12 * 4 + 3 * 112 * 2);
    // One more position of context costs only the full layer's KV read.
    const grow = attentionStepMs(card, m, 1, 2000, 1, ideal) - attentionStepMs(card, m, 1, 1000, 1, ideal);
    expect(grow).toBeCloseTo((1000 * kvBytesPerToken(m)) / 1e12 * 1000, 12);
    // Batch 1 is bandwidth-bound: the full layer reads its weights and KV, each linear layer its
    // weights and its state (read and written), and the LM head its weights.
    const ms = (bytes: number): number => (bytes / 1e12) * 1000;
    const full = ms(attentionParams(m) * 2 + 1000 * kvBytesPerToken(m));
    const linear = ms(linearAttentionParams(m) * 2 + 2 * linearStateBytes(m));
    expect(attentionStepMs(card, m, 1, 1000, 1, ideal)).toBeCloseTo(full + 3 * linear + ms(1000 * 64 * 2), 12);
  });
});
