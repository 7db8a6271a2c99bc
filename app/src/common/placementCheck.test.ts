import { describe, expect, it } from 'vitest';
import type { LaunchSpec } from '@afd/shared';
import { checkPlacements, placementProblems, type AgentView } from './placementCheck.js';
import { fakeInventory } from './testing/fakeInventory.js';

const agents: Record<string, AgentView> = {
  cpuhost: { state: 'connected', inventory: fakeInventory('h', 2, 0) },
  gpuhost: { state: 'connected', inventory: fakeInventory('h', 2, 2) },
  downhost: { state: 'disconnected', inventory: null },
};
const agentOf = (id: string): AgentView | undefined => agents[id];

function spec(placements: Partial<LaunchSpec['placements'][number]>[]): Pick<LaunchSpec, 'placements'> {
  return { placements: placements.map((p, i) => ({ role: 'attention', rank: i, agentId: 'cpuhost', backend: 'cpu', deviceIndex: 0, ...p })) };
}

describe('placementProblems', () => {
  it('accepts CPU and existing GPUs on connected agents', () => {
    expect(placementProblems(spec([{}, { agentId: 'gpuhost', backend: 'cuda', deviceIndex: 1 }]), agentOf)).toEqual([]);
  });
  it('names unknown and disconnected agents', () => {
    const p = placementProblems(spec([{ agentId: 'nope' }, { agentId: 'downhost' }]), agentOf);
    expect(p[0]).toMatch(/attention rank 0 .*"nope".*does not know/);
    expect(p[1]).toMatch(/attention rank 1 .*"downhost", which is disconnected/);
  });
  it('names missing CUDA devices', () => {
    const p = placementProblems(spec([{ backend: 'cuda' }, { agentId: 'gpuhost', backend: 'cuda', deviceIndex: 5 }]), agentOf);
    expect(p[0]).toMatch(/no CUDA device; choose the CPU backend/);
    expect(p[1]).toMatch(/cuda:5 .* has cuda:0, cuda:1/);
  });
  it('checkPlacements throws with every problem', () => {
    expect(() => checkPlacements(spec([{ agentId: 'nope' }]), agentOf)).toThrow(/^cannot launch: attention rank 0/);
  });
});
