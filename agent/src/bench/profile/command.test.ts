/** afd-bench profile on the CPU backend with one-point grids: real engines, a real TCP link. */
import { describe, expect, it } from 'vitest';
import { parseCostProfile } from '@afd/shared';
import { runProfile } from './command.js';

describe('afd-bench profile', () => {
  it('measures every curve on the CPU and writes a profile that loads back', { timeout: 120_000 }, async () => {
    const lines: string[] = [];
    const profile = await runProfile(
      { arch: 'qwen3_moe', preset: 'tiny', backend: 'cpu', threads: '1', device: '0', batches: '1,2', contexts: '8', tokens: '1,8', linkBatches: '1', connectors: 'tcp', steps: '1', warmup: '0' },
      (l) => lines.push(l),
    );
    expect(parseCostProfile(JSON.stringify(profile))).toEqual(profile);
    expect(profile).toMatchObject({ backend: 'cpu', threads: 1, model: { name: 'qwen3_moe/tiny', numLayers: 4, hiddenSize: 256, wireBytesPerElement: 4 } });
    expect(profile.host!.cpus).toBeGreaterThan(0);
    // Version 2: the weights each role holds, KV per token (4 layers x K and V x KV heads x head dim x fp32), the MoE shape, host RAM.
    const m = profile.model;
    expect(m.attentionWeightBytes! + m.ffnWeightBytes!).toBeGreaterThanOrEqual(m.weightBytes);
    expect(m.attentionWeightBytes!).toBeLessThan(m.weightBytes);
    expect(m.kvBytesPerToken! % (4 * 2 * 4)).toBe(0);
    expect(m.moe).toEqual({ numExperts: expect.any(Number), topK: expect.any(Number) });
    expect(profile.deviceMemoryBytes).toBeGreaterThan(0);
    expect(profile.attention.map((p) => [p.batch, p.context])).toEqual([[1, 8], [2, 8]]);
    expect(profile.attention.every((p) => p.ms > 0)).toBe(true);
    expect(profile.ffn.map((p) => p.tokens)).toEqual([1, 8]);
    expect(profile.ffn.every((p) => p.ms > 0)).toBe(true);
    expect(profile.connectors).toHaveLength(1);
    expect(profile.connectors[0]!.points).toEqual([{ bytes: 1024, ms: expect.any(Number) }]);
    expect(lines.at(-1)).toMatch(/measured in/);
  });

  it('refuses an unknown connector and backend by name', async () => {
    const base = { arch: 'qwen3_moe', preset: 'tiny', backend: 'cpu', threads: '1', device: '0', batches: '1', contexts: '8', tokens: '1', linkBatches: '1', connectors: 'tcp', steps: '1', warmup: '0' };
    await expect(runProfile({ ...base, connectors: 'carrier-pigeon' }, () => {})).rejects.toThrow(/--connectors: "carrier-pigeon" is not a connector \(tcp/);
    await expect(runProfile({ ...base, backend: 'tpu' }, () => {})).rejects.toThrow(/--backend takes cpu or cuda, got "tpu"/);
  });
});
