import { readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { tempDir } from '../testing/checkpointTesting.js';
import { tinyHybridConfigs } from '../testing/engineTesting.js';
import { parseModelConfig } from './config.js';
import { familyRowOf } from './families.js';
import { storedTensorPlans } from './fusedExperts.js';
import { buildLoadSpec } from './loadSpec.js';
import { fromBf16Bits, toBf16Bits } from './random.js';
import { singleFileName } from './shards.js';
import { modelTensors } from './tensorTables.js';
import { writeSafetensors, type TensorPlan } from './writer.js';

const json = tinyHybridConfigs['qwen3_5_moe']!;
const config = parseModelConfig('config.json', json);
// The tiny Qwen3.5-MoE: 6 experts of 5 (moe_intermediate_size), hidden 20.
const E = 6;
const I = 5;
const H = 20;

/** Values that say where they sit: expert e's gate rows are e, its up rows e + 0.5, its down rows e + 0.25 (exact in bf16). */
function tagged(t: TensorPlan): Uint8Array {
  const n = t.shape.reduce((a, b) => a * b, 1);
  const out = new Uint16Array(n);
  const gateUp = t.name.endsWith('gate_up_proj');
  const down = t.name.endsWith('experts.down_proj');
  for (let i = 0; i < n; i++) {
    let v = 0.125;
    if (gateUp) {
      const e = Math.floor(i / (2 * I * H));
      v = e + (Math.floor(i / H) % (2 * I) >= I ? 0.5 : 0);
    } else if (down) v = Math.floor(i / (H * I)) + 0.25;
    out[i] = toBf16Bits(v);
  }
  return new Uint8Array(out.buffer);
}

let dir: string;
beforeEach(async () => {
  dir = await tempDir('afd-fused-');
  await writeFile(join(dir, 'config.json'), JSON.stringify(json));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function writeFused(reshape: Record<string, number[]> = {}): Promise<void> {
  const plans: TensorPlan[] = storedTensorPlans(familyRowOf(config), config, modelTensors(config)).map((t) => ({ name: t.name, dtype: 'bf16', shape: reshape[t.name] ?? t.shape }));
  await writeSafetensors(join(dir, singleFileName), plans, tagged);
}

describe('fused expert tensors (Qwen3.5-MoE checkpoints)', () => {
  it('stores each MoE layer as gate_up_proj [E, 2I, H] and down_proj [E, H, I] in place of the per-expert tensors', () => {
    const plans = storedTensorPlans(familyRowOf(config), config, modelTensors(config));
    const names = plans.map((p) => p.name);
    expect(plans.find((p) => p.name === 'model.language_model.layers.1.mlp.experts.gate_up_proj')?.shape).toEqual([E, 2 * I, H]);
    expect(plans.find((p) => p.name === 'model.language_model.layers.1.mlp.experts.down_proj')?.shape).toEqual([E, H, I]);
    expect(names.some((n) => /experts\.\d+\./.test(n))).toBe(false);
    // Every other tensor as modelTensors names it; two fused tensors for the 3 x E x 3 projections of each layer.
    expect(plans.length).toBe(modelTensors(config).length - 3 * 3 * E + 3 * 2);
  });

  it('binds every expert projection to its byte range inside the fused tensor, for every role and expert range', async () => {
    await writeFused();
    const bytes = await readFile(join(dir, singleFileName));
    const { spec } = await buildLoadSpec(dir, 'ffn');
    const experts = spec.tensors.filter((t) => t.expert !== undefined);
    expect(experts.length).toBe(3 * 3 * E);
    for (const t of experts) {
      const want = t.expert! + (t.slot === 'ffn.experts.up_proj' ? 0.5 : t.slot === 'ffn.experts.down_proj' ? 0.25 : 0);
      expect(t.shape).toEqual(t.slot === 'ffn.experts.down_proj' ? [H, I] : [I, H]);
      expect(t.byteLength).toBe(I * H * 2);
      for (let i = 0; i < t.byteLength; i += 2) {
        if (fromBf16Bits(bytes.readUInt16LE(t.offset + i)) !== want) throw new Error(`${t.name} layer ${t.layer} expert ${t.expert}: byte ${i} is not ${want}`);
      }
    }
    expect(experts.find((t) => t.layer === 2 && t.expert === 4 && t.slot === 'ffn.experts.up_proj')?.name).toBe('model.language_model.layers.2.mlp.experts.gate_up_proj[4, up rows]');
    // An expert-parallel FFN rank maps only its experts' ranges.
    const rank1 = (await buildLoadSpec(dir, 'ffn', { expertParallel: { rank: 1, numRanks: 2 } })).spec;
    expect(new Set(rank1.tensors.filter((t) => t.expert !== undefined).map((t) => t.expert))).toEqual(new Set([3, 4, 5]));
    // The attention role holds no expert.
    expect((await buildLoadSpec(dir, 'attention')).spec.tensors.some((t) => t.expert !== undefined)).toBe(false);
  });

  it('refuses a fused tensor whose shape disagrees with config.json, naming it', async () => {
    await writeFused({ 'model.language_model.layers.1.mlp.experts.gate_up_proj': [E, 2 * I + 2, H] });
    await expect(buildLoadSpec(dir, 'colocated')).rejects.toThrow(/tensor model\.language_model\.layers\.1\.mlp\.experts\.gate_up_proj: has shape \[6, 12, 20\] but config\.json needs \[6, 10, 20\] \(num_experts, 2 x moe_intermediate_size, hidden_size\)/);
  });
});
