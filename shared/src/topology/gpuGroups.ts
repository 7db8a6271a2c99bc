/**
 * Which ranks of a launch share a GPU: the CUDA placements grouped by agent and device
 * index. Pure, so the agent (which starts MPS for shared GPUs) and the console (which
 * warns about them before launch) read placements the same way.
 */
import type { SmShare } from '../protocol/gpuSharing.js';
import type { RankPlacement } from '../protocol/launch.js';

/** The ranks one agent places on one of its GPUs. */
export interface GpuGroup {
  agentId: string;
  deviceIndex: number;
  /** In the order the spec lists them. */
  placements: RankPlacement[];
}

/** Every GPU the placements use, ordered by agent id, then device index. */
export function gpuGroups(placements: readonly RankPlacement[]): GpuGroup[] {
  const groups = new Map<string, GpuGroup>();
  for (const p of placements) {
    if (p.backend !== 'cuda') continue;
    const key = `${p.agentId}\u0000${p.deviceIndex}`;
    const g = groups.get(key) ?? { agentId: p.agentId, deviceIndex: p.deviceIndex, placements: [] };
    g.placements.push(p);
    groups.set(key, g);
  }
  return [...groups.values()].sort((a, b) => (a.agentId === b.agentId ? a.deviceIndex - b.deviceIndex : a.agentId < b.agentId ? -1 : 1));
}

/** The GPUs that hold two or more ranks. */
export function sharedGpuGroups(placements: readonly RankPlacement[]): GpuGroup[] {
  return gpuGroups(placements).filter((g) => g.placements.length > 1);
}

/** A rank's SM share under MPS, percent: its placement's, else its role's; null = no cap. */
export function smShareOf(placement: Pick<RankPlacement, 'role' | 'smShare'>, roleShares: SmShare): number | null {
  return placement.smShare ?? roleShares[placement.role] ?? null;
}

/** "ffn 0, attention 0": the ranks of a group, for messages. */
export function groupRanksText(group: Pick<GpuGroup, 'placements'>): string {
  return group.placements.map((p) => `${p.role} ${p.rank}`).join(', ');
}
