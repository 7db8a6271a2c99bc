import { describe, expect, it } from 'vitest';
import type { AgentInfo, RankPlacement } from '@afd/shared';
import { fakeInventory } from '../../common/testing/fakeInventory.js';
import { gpuSharingChecks } from './gpuSharingChecks.js';

function agent(mpsReason: string | null): AgentInfo {
  const inventory = fakeInventory('g', 8, 2);
  if (mpsReason) inventory.devices = inventory.devices.map((d) => (d.kind === 'cuda' ? { ...d, mps: { available: false, reason: mpsReason } } : d));
  return { agentId: 'g', url: 'ws://g:7700', state: 'connected', message: null, latencyMs: 1, topology: null, inventory };
}

const on = (role: RankPlacement['role'], rank: number, deviceIndex: number): RankPlacement => ({ role, rank, agentId: 'g', backend: 'cuda', deviceIndex });
const shared = [on('ffn', 0, 0), on('attention', 0, 0), on('attention', 1, 1)];

describe('gpuSharingChecks', () => {
  it('says nothing when every rank has its own GPU', () => {
    expect(gpuSharingChecks([on('ffn', 0, 0), on('attention', 0, 1)], [agent(null)], { mode: 'auto', smShare: {} })).toEqual({ problems: [], warnings: [] });
  });

  it('auto or mps with MPS on the agent: the GPU\'s ranks run at once', () => {
    for (const mode of ['auto', 'mps'] as const) {
      expect(gpuSharingChecks(shared, [agent(null)], { mode, smShare: {} })).toEqual({ problems: [], warnings: ['ffn 0, attention 0 share g cuda:0: they run at once under CUDA MPS (the agent starts or reuses its control daemon)'] });
    }
  });

  it('without MPS on the agent: auto warns of time slices, mps cannot launch', () => {
    const noMps = agent('nvidia-cuda-mps-control was not found');
    const auto = gpuSharingChecks(shared, [noMps], { mode: 'auto', smShare: {} });
    expect(auto.problems).toEqual([]);
    expect(auto.warnings[0]).toMatch(/^ffn 0, attention 0 share g cuda:0 without MPS \(nvidia-cuda-mps-control was not found\): the driver time-slices them/);
    expect(gpuSharingChecks(shared, [noMps], { mode: 'mps', smShare: {} }).problems).toEqual([
      'ffn 0, attention 0 share g cuda:0, and GPU sharing is mps, but agent g cannot run MPS there: nvidia-cuda-mps-control was not found; choose GPU sharing auto, or give each rank its own GPU',
    ]);
  });

  it('time-slice: a warning with the cost and the way out', () => {
    expect(gpuSharingChecks(shared, [agent(null)], { mode: 'time-slice', smShare: {} }).warnings[0]).toMatch(/^ffn 0, attention 0 share g cuda:0, time-sliced \(GPU sharing time-slice\): .*choose GPU sharing auto/);
  });
});
