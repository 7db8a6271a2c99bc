import { describe, expect, it } from 'vitest';
import { CARDS, findCard, type CardSpec } from './cards.js';
import { modelFromConfig, modelPreset } from './modelShape.js';
import { layerCosts } from './costs.js';
import { parseCostProfile } from './profile.js';
import { imbalanceFactor } from './epImbalance.js';
import { attentionStepMs, expectedExperts, ffnStepMs, modelParams, rooflineProfile, ROOFLINE_DEFAULTS } from './roofline.js';

// A card of round numbers: 1 TB/s, 1 PFLOP/s; factors 1 and no launch cost, so the roofline is closed form.
const card: CardSpec = { name: 'toy', label: 'Toy', memoryBytesPerS: 1e12, memoryGB: 1, bf16Flops: 1e15, nvlinkBytesPerS: 0, source: 'test' };
const ideal = { bandwidthEfficiency: 1, computeEfficiency: 1, launchMsPerLayer: 0 };
// Dense: attention weights 4 x 1024^2 = 4,194,304 elements; KV 2 x 8 x 128 x 2 B = 4,096 B per token per layer.
const dense = modelFromConfig({ num_hidden_layers: 2, hidden_size: 1024, num_attention_heads: 8, intermediate_size: 4096, vocab_size: 1000, torch_dtype: 'bfloat16' }, { name: 'toy' });

describe('roofline cost model', () => {
  it('attention is bandwidth-bound at small batches: weights + KV over the bandwidth, plus the LM head', () => {
    // per layer: (4,194,304 x 2 + 1 x 1000 x 4096) B / 1e12 B/s = 0.012484608 ms; LM head 1000 x 1024 x 2 B = 0.002048 ms
    expect(attentionStepMs(card, dense, 1, 1000, 1, ideal)).toBeCloseTo(2 * 0.012484608 + 0.002048, 12);
    // KV reads grow with the context: 1000 more positions add 1000 x 4096 B per layer
    expect(attentionStepMs(card, dense, 1, 2000, 1, ideal) - attentionStepMs(card, dense, 1, 1000, 1, ideal)).toBeCloseTo(2 * 0.004096, 12);
  });

  it('attention turns compute-bound at large batches: 2 flops per weight per sequence over the peak', () => {
    // batch 4096, context 0: 4096 x 2 x 4,194,304 flops / 1e15 = 0.034359738 ms per layer (bytes: 0.0084 ms)
    const head = Math.max((1000 * 1024 * 2) / 1e12, (4096 * 2 * 1000 * 1024) / 1e15) * 1000;
    expect(attentionStepMs(card, dense, 4096, 0, 1, ideal)).toBeCloseTo(2 * ((4096 * 2 * 4194304) / 1e15) * 1000 + head, 12);
  });

  it('the efficiency factors and the launch cost apply as documented', () => {
    const o = { bandwidthEfficiency: 0.5, computeEfficiency: 1, launchMsPerLayer: 0.01 };
    expect(attentionStepMs(card, dense, 1, 1000, 1, o)).toBeCloseTo(2 * (0.012484608 / 0.5 + 0.01) + 0.002048 / 0.5 + 0.01, 12);
    expect(ROOFLINE_DEFAULTS.bandwidthEfficiency).toBe(0.7);
  });

  it('expected distinct experts: E x (1 - (1 - k/E)^T)', () => {
    expect(expectedExperts(128, 8, 1)).toBeCloseTo(8, 12);
    expect(expectedExperts(128, 8, 2)).toBeCloseTo(128 * (1 - (120 / 128) ** 2), 12); // 15.5
    expect(expectedExperts(128, 8, 10000)).toBeCloseTo(128, 6);
    expect(expectedExperts(0, 0, 5)).toBe(0);
  });

  it('an MoE FFN reads the experts its tokens touch; EP over g GPUs divides the bytes by g', () => {
    // 4 experts of 3 x 10 x 100 = 3,000 elements, top-1, fp8 (1 B), router 10 x 4
    const moe = modelFromConfig({ num_hidden_layers: 3, hidden_size: 10, num_attention_heads: 1, num_experts: 4, num_experts_per_tok: 1, moe_intermediate_size: 100, vocab_size: 10 }, { bytesPerElement: 1 });
    const perLayer = (t: number) => ((expectedExperts(4, 1, t) * 3000 + 40) / 1e12) * 1000;
    expect(ffnStepMs(card, moe, 1, 1, ideal)).toBeCloseTo(3 * perLayer(1), 15); // one expert: 3,040 B
    expect(ffnStepMs(card, moe, 3, 1, ideal)).toBeCloseTo(3 * perLayer(3), 15); // 4 x (1 - 0.75^3) = 2.3125 experts
    expect(ffnStepMs(card, moe, 3, 2, { ...ideal, epBalanced: true })).toBeCloseTo((3 * perLayer(3)) / 2, 15);
    // unbalanced (the default): the busiest GPU's routed rows, as f x 3 tokens, and the experts they touch
    const f = imbalanceFactor(3, 1, 4, 2);
    expect(f).toBeGreaterThan(1);
    expect(ffnStepMs(card, moe, 3, 2, ideal)).toBeCloseTo((3 * perLayer(3 * f)) / 2, 15);
    expect(ffnStepMs(card, moe, 3, 1, ideal)).toBe(ffnStepMs(card, moe, 3, 1, { ...ideal, epBalanced: true }));
    // a dense FFN reads its 3 x 1024 x 4096 weights once per layer whatever the tokens (until compute-bound)
    expect(ffnStepMs(card, dense, 8, 1, ideal)).toBeCloseTo(2 * ((3 * 1024 * 4096 * 2) / 1e12) * 1000, 12);
  });

  it('public configs come out at their published parameter counts', () => {
    const billions = (name: string) => modelParams(modelPreset(name)) / 1e9;
    expect(billions('qwen3-30b-a3b')).toBeGreaterThan(29.5); // 30.5B
    expect(billions('qwen3-30b-a3b')).toBeLessThan(31.5);
    expect(billions('deepseek-v3')).toBeGreaterThan(655); // 671B (685B with the MTP module)
    expect(billions('deepseek-v3')).toBeLessThan(690);
    expect(billions('deepseek-v2-lite')).toBeGreaterThan(15); // 15.7B
    expect(billions('deepseek-v2-lite')).toBeLessThan(16.5);
    expect(billions('mixtral-8x22b')).toBeGreaterThan(138); // 141B
    expect(billions('mixtral-8x22b')).toBeLessThan(144);
    expect(billions('step3-like')).toBeGreaterThan(300); // 316B language model (321B with vision)
    expect(billions('step3-like')).toBeLessThan(330);
    expect(modelPreset('deepseek-v3').mla).toMatchObject({ kvLoraRank: 512, ropeDim: 64 });
    expect(() => modelPreset('gpt-9')).toThrow(/unknown model "gpt-9": known shapes are qwen3-30b-a3b, deepseek-v3/);
    expect(() => modelFromConfig({ hidden_size: 8 }, { name: 'x' })).toThrow(/model config x: needs num_hidden_layers or num_layers/);
  });

  it('a roofline profile has the measured schema, says roofline, and round-trips through the parser and layerCosts', () => {
    const m = modelPreset('qwen3-30b-a3b');
    const p = rooflineProfile(findCard('h100'), m, { at: '2026-12-07T00:00:00.000Z' });
    expect(parseCostProfile(JSON.stringify(p))).toEqual(p);
    expect(p).toMatchObject({ source: 'roofline', backend: 'cuda', device: 'NVIDIA H100 SXM 80GB (roofline)' });
    const c = layerCosts(p, { name: 'x', bandwidthBytesPerS: 1e9, latencyUs: 1, source: 'test' });
    expect(c.attentionMs(16, 4096) * m.numLayers).toBeCloseTo(attentionStepMs(findCard('h100'), m, 16, 4096), 9);
    expect(c.ffnMs(64) * m.numLayers).toBeCloseTo(ffnStepMs(findCard('h100'), m, 64), 9);
  });

  it('the card table: every card has a source, and unknown names list the known ones', () => {
    for (const c of CARDS) expect(c.source).toMatch(/^(published|reported): /);
    expect(findCard('H200').memoryBytesPerS).toBe(4.8e12);
    expect(() => findCard('tpu7')).toThrow(/unknown card "tpu7": known cards are h100, h800, h200, b200, gb200, a100, h20, l40s/);
  });
});
