import { describe, expect, it } from 'vitest';
import { dummyLoadSpec, parseModelConfig } from '@afd/native/checkpoint';
import { findPreset, presetConfigJson } from '../model/presets.js';
import { kvBytesPerStep, stateBytesPerStep, weightBytesPerStep } from './stepFloor.js';

function presetSpec(arch: string, name: string) {
  return dummyLoadSpec(parseModelConfig(`${arch}/${name}`, presetConfigJson(findPreset(arch, name))), 'colocated', { seed: 1 }).spec;
}

describe('decode step floor', () => {
  it('reads K and V of every kv head per cached position (GQA)', () => {
    const spec = presetSpec('qwen3_moe', 'qwen3-30b-a3b');
    // 48 layers x (K + V) x 4 kv heads x 128 dims x 2 bytes.
    expect(kvBytesPerStep(spec, 2, 10, 2)).toBe(2 * 10 * 48 * 2 * 4 * 128 * 2);
  });

  it('reads one latent row (kv_lora_rank + qk_rope_head_dim) per cached position of an MLA model', () => {
    const spec = presetSpec('deepseek_v2', 'deepseek-v2-lite');
    // DeepSeek-V2-Lite: 27 layers x (512 + 64) x 2 bytes, no separate V.
    expect(kvBytesPerStep(spec, 3, 100, 2)).toBe(3 * 100 * 27 * 576 * 2);
  });

  it('counts KV of the full-attention layers only and the recurrent state of the gdn layers (Qwen3.5-35B-A3B)', () => {
    const spec = presetSpec('qwen3_5_moe', 'qwen3.5-35b-a3b');
    // 10 gated full-attention layers x (K + V) x 2 kv heads x 256 dims x 2 bytes per position.
    expect(kvBytesPerStep(spec, 2, 10, 2)).toBe(2 * 10 * 10 * 2 * 2 * 256 * 2);
    // 30 gdn layers: conv (2 x 16 x 128 + 32 x 128 channels x 3) + delta (32 x 128 x 128), f32, read and written.
    expect(stateBytesPerStep(spec, 4)).toBe(2 * 4 * 30 * (8192 * 3 + 32 * 128 * 128) * 4);
    expect(stateBytesPerStep(presetSpec('qwen3_moe', 'qwen3-30b-a3b'), 4)).toBe(0);
  });

  it('counts the shared experts and the dense layer fully, the routed experts by the expected active count', () => {
    const spec = presetSpec('deepseek_v2', 'deepseek-v2-lite');
    const routed = spec.tensors.filter((t) => /\.experts\.\d+\./.test(t.name)).reduce((s, t) => s + t.byteLength, 0);
    const rest = spec.tensors.filter((t) => !/\.experts\.\d+\./.test(t.name) && t.name !== 'model.embed_tokens.weight').reduce((s, t) => s + t.byteLength, 0);
    const embedRow = (2048 * 2);
    // Batch 1 of top-6 of 64: 6 of 64 routed experts per layer.
    expect(weightBytesPerStep(spec, 1)).toBeCloseTo(rest + embedRow + (routed * 6) / 64, 0);
    expect(spec.tensors.some((t) => t.name === 'model.layers.1.mlp.shared_experts.gate_proj.weight')).toBe(true);
  });
});
