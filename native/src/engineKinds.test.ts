import { describe, expect, it } from 'vitest';
import { parseModelConfig } from './checkpoint/config.js';
import { dummyLoadSpec } from './checkpoint/dummy.js';
import { Engine, type EngineAddon } from './engine.js';
import { engineGaps, engineRefusal } from './engineKinds.js';
import { tinyConfigs, tinyHybridConfigs } from './testing/engineTesting.js';

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
  it('finds nothing missing for the families the engine serves, the hybrid Gated DeltaNet ones included', () => {
    for (const [arch, json] of Object.entries({ ...tinyConfigs, ...tinyHybridConfigs })) expect(engineRefusal(parse(json)), arch).toBeNull();
  });

  /** The tiny Qwen3-Next config with its gdn layers relabelled as a kind the engine lacks. */
  const withUnknownKind = (json: Record<string, unknown>) => {
    const config = parse(json);
    return { ...config, layers: config.layers.map((l) => (l.attention === 'gdn' ? { ...l, attention: 'mamba2' as never } : l)) };
  };

  it('names the family and each missing kind with its layers', () => {
    const next = withUnknownKind(tinyHybridConfigs['qwen3_next']!);
    expect(engineGaps(next)).toEqual(['attention kind mamba2 (layers 0, 2)']);
    // A long list is cut after four ranges, with the count; one layer is "layer N".
    const big = withUnknownKind({ ...tinyHybridConfigs['qwen3_next']!, num_hidden_layers: 48, full_attention_interval: 4, mlp_only_layers: [] });
    expect(engineGaps(big)).toEqual(['attention kind mamba2 (36 layers: 0-2, 4-6, 8-10, 12-14, ...)']);
    const one = withUnknownKind({ ...tinyHybridConfigs['qwen3_next']!, num_hidden_layers: 2, full_attention_interval: 2, mlp_only_layers: [] });
    expect(engineGaps(one)).toEqual(['attention kind mamba2 (layer 0)']);
    expect(engineRefusal(next)).toMatch(/^Qwen3NextForCausalLM \(family qwen3_next\): attention kind mamba2 \(layers 0, 2\) not yet implemented on the engine\./);
  });

  it('Engine.load refuses such a spec in TypeScript, before native code sees it', async () => {
    const { addon, loads } = recordingAddon();
    const spec = dummyLoadSpec(parse(tinyHybridConfigs['qwen3_next']!), 'colocated', { seed: 0 }).spec;
    await expect(Engine.loadWith(addon, { ...spec, config: withUnknownKind(tinyHybridConfigs['qwen3_next']!) })).rejects.toThrow(/family qwen3_next.*not yet implemented on the engine/);
    expect(loads).toEqual([]);
    // A family the engine builds goes on to native code.
    await expect(Engine.loadWith(addon, spec)).rejects.toThrow(/native load reached/);
    expect(loads).toEqual([1]);
  });
});
