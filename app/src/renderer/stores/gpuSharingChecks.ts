/**
 * What the Topology screen says about ranks that share a GPU, before launch: under GPU
 * sharing auto or mps they run at once under CUDA MPS where the agent can run it (its
 * inventory says so per GPU); where it cannot, auto runs them time-sliced (a warning with
 * the cost) and mps cannot launch (a problem); time-slice is a warning with the cost.
 */
import { groupRanksText, sharedGpuGroups, type AgentInfo, type GpuSharingConfig, type RankPlacement } from '@afd/shared';

export interface GpuSharingChecks {
  /** Blocking: mode mps on a GPU whose agent cannot run MPS. */
  problems: string[];
  /** Remarks: how each shared GPU will run. */
  warnings: string[];
}

const SLOW = 'the driver time-slices them, so every layer crossing waits for the other rank\'s turn (many times slower steps)';

/** One remark (or problem) per GPU that holds several ranks. */
export function gpuSharingChecks(placements: readonly RankPlacement[], agents: readonly AgentInfo[], sharing: GpuSharingConfig): GpuSharingChecks {
  const problems: string[] = [];
  const warnings: string[] = [];
  for (const g of sharedGpuGroups(placements)) {
    const where = `${g.agentId} cuda:${g.deviceIndex}`;
    const who = `${groupRanksText(g)} share ${where}`;
    if (sharing.mode === 'time-slice') {
      warnings.push(`${who}, time-sliced (GPU sharing time-slice): ${SLOW}; choose GPU sharing auto to run them at once under CUDA MPS`);
      continue;
    }
    const device = agents.find((a) => a.agentId === g.agentId)?.inventory?.devices.find((d) => d.kind === 'cuda' && d.index === g.deviceIndex);
    const mps = device?.kind === 'cuda' ? device.mps : { available: false, reason: 'the agent reports no such GPU' };
    if (mps.available) warnings.push(`${who}: they run at once under CUDA MPS (the agent starts or reuses its control daemon)`);
    else if (sharing.mode === 'mps') problems.push(`${who}, and GPU sharing is mps, but agent ${g.agentId} cannot run MPS there: ${mps.reason ?? 'no reason given'}; choose GPU sharing auto, or give each rank its own GPU`);
    else warnings.push(`${who} without MPS (${mps.reason ?? 'no reason given'}): ${SLOW}; give each rank its own GPU, or make MPS available on the agent`);
  }
  return { problems, warnings };
}
