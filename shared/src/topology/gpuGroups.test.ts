import { describe, expect, it } from 'vitest';
import { launchSpecSchema, type RankPlacement } from '../protocol/launch.js';
import { gpuGroups, groupRanksText, sharedGpuGroups, smShareOf } from './gpuGroups.js';

const on = (role: RankPlacement['role'], rank: number, agentId: string, deviceIndex: number, backend: 'cpu' | 'cuda' = 'cuda'): RankPlacement => ({ role, rank, agentId, backend, deviceIndex });

describe('gpuGroups', () => {
  it('groups CUDA ranks by agent and device, in spec order, and leaves CPU ranks out', () => {
    const placements = [on('ffn', 0, 'b', 0), on('ffn', 1, 'a', 1), on('attention', 0, 'b', 0), on('attention', 1, 'a', 0), on('attention', 2, 'a', 0, 'cpu')];
    expect(gpuGroups(placements).map((g) => [g.agentId, g.deviceIndex, groupRanksText(g)])).toEqual([
      ['a', 0, 'attention 1'],
      ['a', 1, 'ffn 1'],
      ['b', 0, 'ffn 0, attention 0'],
    ]);
    expect(sharedGpuGroups(placements).map((g) => `${g.agentId}:${g.deviceIndex}`)).toEqual(['b:0']);
  });

  it('takes a placement\'s SM share over its role\'s, and no cap when neither names one', () => {
    expect(smShareOf({ role: 'ffn', smShare: 70 }, { ffn: 60 })).toBe(70);
    expect(smShareOf({ role: 'ffn' }, { ffn: 60 })).toBe(60);
    expect(smShareOf({ role: 'attention' }, { ffn: 60 })).toBeNull();
  });
});

describe('the launch spec\'s GPU sharing', () => {
  const oneGpu = { mode: 'afd' as const, topology: '1A1F', placements: [on('ffn', 0, 'a', 0), on('attention', 0, 'a', 0)] };

  it('defaults to auto with no SM shares', () => {
    expect(launchSpecSchema.parse(oneGpu).gpuSharing).toEqual({ mode: 'auto', smShare: {} });
  });

  it('takes shares per role and per placement, 1..100 percent', () => {
    const spec = launchSpecSchema.parse({ ...oneGpu, placements: [{ ...on('ffn', 0, 'a', 0), smShare: 55 }, on('attention', 0, 'a', 0)], gpuSharing: { mode: 'mps', smShare: { attention: 40, ffn: 60 } } });
    expect(spec.gpuSharing).toEqual({ mode: 'mps', smShare: { attention: 40, ffn: 60 } });
    expect(spec.placements[0]!.smShare).toBe(55);
    const bad = launchSpecSchema.safeParse({ ...oneGpu, gpuSharing: { smShare: { ffn: 0 } } });
    expect(bad.success).toBe(false);
    expect(bad.error?.issues[0]?.message).toBe('an SM share is 1..100 percent');
    expect(launchSpecSchema.safeParse({ ...oneGpu, gpuSharing: { mode: 'share' } }).success).toBe(false);
  });

  it('refuses SM shares with time slicing, naming them', () => {
    const r = launchSpecSchema.safeParse({ ...oneGpu, placements: [{ ...on('ffn', 0, 'a', 0), smShare: 50 }, on('attention', 0, 'a', 0)], gpuSharing: { mode: 'time-slice', smShare: { attention: 40 } } });
    expect(r.error?.issues.map((i) => `${i.path.join('.')}: ${i.message}`)).toEqual([
      'gpuSharing.smShare: SM shares (role attention, ffn 0) need MPS, but gpuSharing.mode is time-slice; use mode auto or mps, or drop the shares',
    ]);
    expect(launchSpecSchema.safeParse({ ...oneGpu, gpuSharing: { mode: 'time-slice' } }).success).toBe(true);
  });
});
