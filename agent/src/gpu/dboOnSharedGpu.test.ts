import { describe, expect, it } from 'vitest';
import { launchSpecSchema, type RankPlacement } from '@afd/shared';
import { dboOnSharedGpus, specForPlacement } from './dboOnSharedGpu.js';

const on = (role: RankPlacement['role'], rank: number, agentId: string, deviceIndex: number): RankPlacement => ({ role, rank, agentId, backend: 'cuda', deviceIndex });
const spec2A2F = (dbo: object, placements: RankPlacement[]) =>
  launchSpecSchema.parse({ mode: 'afd', topology: '2A2F', apiPort: 0, afd: { dbo }, placements });

describe('dboOnSharedGpus', () => {
  // 2A2F: attention 0 + ffn 0 on GPU 0, attention 1 alone on GPU 1, ffn 1 alone on GPU 2 (agent a).
  const placements = [on('ffn', 0, 'a', 0), on('ffn', 1, 'a', 2), on('attention', 0, 'a', 0), on('attention', 1, 'a', 1)];

  it('turns DBO off only for attention ranks whose GPU also holds an FFN rank, and says why and how to keep it', () => {
    const spec = spec2A2F({ enabled: true }, placements);
    const d = dboOnSharedGpus(spec, 'a');
    expect([...d.offRanks]).toEqual([0]);
    expect(d.note).toMatch(/^DBO off for attention rank 0: GPU 0 \(attention 0 with ffn 0\) share one GPU, .*read the expert weights twice.*onSharedGpu "keep"/);
    const a0 = specForPlacement(spec, { role: 'attention', rank: 0 }, d);
    const a1 = specForPlacement(spec, { role: 'attention', rank: 1 }, d);
    expect(a0.mode === 'afd' && a0.afd.dbo.enabled).toBe(false);
    expect(a1.mode === 'afd' && a1.afd.dbo.enabled).toBe(true);
    expect(specForPlacement(spec, { role: 'ffn', rank: 0 }, d)).toBe(spec);
  });

  it('changes nothing when DBO is off, kept on purpose, or no GPU mixes the roles (two attention ranks sharing is fine)', () => {
    expect(dboOnSharedGpus(spec2A2F({ enabled: false }, placements), 'a').note).toBeNull();
    expect(dboOnSharedGpus(spec2A2F({ enabled: true, onSharedGpu: 'keep' }, placements), 'a').offRanks.size).toBe(0);
    const apart = [on('ffn', 0, 'a', 0), on('ffn', 1, 'a', 0), on('attention', 0, 'a', 1), on('attention', 1, 'a', 1)];
    expect(dboOnSharedGpus(spec2A2F({ enabled: true }, apart), 'a').note).toBeNull();
    // The same GPU index on two hosts is two GPUs.
    const hosts = [on('ffn', 0, 'a', 0), on('ffn', 1, 'a', 1), on('attention', 0, 'b', 0), on('attention', 1, 'b', 1)];
    expect(dboOnSharedGpus(spec2A2F({ enabled: true }, hosts), 'b').note).toBeNull();
  });
});
