import { describe, expect, it } from 'vitest';
import { parseModelConfig } from './checkpoint/config.js';
import { dummyLoadSpec } from './checkpoint/dummy.js';
import { Engine, type EngineAddon } from './engine.js';
import { engineGaps, engineRefusal } from './engineKinds.js';
import { tinyConfigs, tinyConfigsNotYetOnEngine } from './testing/engineTesting.js';

const parse = (json: Record<string, unknown>) => parseModelConfig('/m/config.json', json);

/** An addon whose engine records that native code was reached (no native binary needed). */
function recordingAddon(): { addon: EngineAddon; loads: number[] } {
  const loads: number[] = [];
  class FakeEngine {
    load(): Promise<never> {
      loads.push(1);
      return Promise.reject(new Error('native load reached'));
    }
  }
  return { addon: { Engine: FakeEngine } as unknown as EngineAddon, loads };
}

describe('what the engine builds', () => {
  it('finds nothing missing for the families the engine serves', () => {
    for (const [arch, json] of Object.entries(tinyConfigs)) expect(engineRefusal(parse(json)), arch).toBeNull();
  });

  it('names the family and each missing kind with its layers (gated attention, the gated shared expert, (1 + weight) norms and partial RoPE are built)', () => {
    const next = parse(tinyConfigsNotYetOnEngine['qwen3_next']!);
    expect(engineGaps(next)).toEqual(['attention kind gdn (layers 0, 2)']);
    // A long list is cut after four ranges, with the count; one layer is "layer N".
    const big = parse({ ...tinyConfigsNotYetOnEngine['qwen3_next']!, num_hidden_layers: 48, full_attention_interval: 4, mlp_only_layers: [] });
    expect(engineGaps(big)).toEqual(['attention kind gdn (36 layers: 0-2, 4-6, 8-10, 12-14, ...)']);
    const one = parse({ ...tinyConfigsNotYetOnEngine['qwen3_next']!, num_hidden_layers: 2, full_attention_interval: 2, mlp_only_layers: [] });
    expect(engineGaps(one)).toEqual(['attention kind gdn (layer 0)']);
    // Every layer full attention: nothing is missing.
    expect(engineGaps(parse({ ...tinyConfigsNotYetOnEngine['qwen3_next']!, full_attention_interval: 1 }))).toEqual([]);
    const message = engineRefusal(next)!;
    expect(message).toMatch(/^Qwen3NextForCausalLM \(family qwen3_next\): attention kind gdn \(layers 0, 2\) not yet implemented on the engine\./);
    expect(engineRefusal(parse(tinyConfigsNotYetOnEngine['qwen3_5_moe']!))).toMatch(/^Qwen3_5MoeForConditionalGeneration \(family qwen3_5_moe\): .*not yet implemented on the engine/);
  });

  it('Engine.load refuses such a spec in TypeScript, before native code sees it', async () => {
    const { addon, loads } = recordingAddon();
    const spec = dummyLoadSpec(parse(tinyConfigsNotYetOnEngine['qwen3_next']!), 'colocated', { seed: 0 }).spec;
    await expect(Engine.loadWith(addon, spec)).rejects.toThrow(/family qwen3_next.*not yet implemented on the engine/);
    expect(loads).toEqual([]);
    // A family the engine builds goes on to native code.
    await expect(Engine.loadWith(addon, dummyLoadSpec(parse(tinyConfigs['qwen3']!), 'colocated', { seed: 0 }).spec)).rejects.toThrow(/native load reached/);
    expect(loads).toEqual([1]);
  });
});
