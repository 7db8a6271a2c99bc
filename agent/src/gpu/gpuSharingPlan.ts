/**
 * What an agent does for the GPUs of one launch, as pure functions: the mode it runs with
 * (the spec's, or the agent's own when the spec says auto), how each of its GPUs is
 * shared once MPS was had or not, the environment of a rank on an MPS-shared GPU, and the
 * warning for GPUs left to the driver's time slicing.
 */
import { groupRanksText, smShareOf, type GpuGroup, type GpuShareState, type GpuSharingMode, type RankPlacement, type SmShare } from '@afd/shared';

/**
 * The mode of a launch on this agent: the spec's unless it says auto, then the agent's
 * (`serve --gpu-sharing`). A launch that demands MPS from an agent told never to start it is refused.
 */
export function effectiveSharingMode(specMode: GpuSharingMode, agentMode: GpuSharingMode): GpuSharingMode {
  if (specMode === 'mps' && agentMode === 'time-slice') {
    throw new Error('the launch asks for gpuSharing mps, but this agent runs with --gpu-sharing time-slice (it never starts MPS): launch with gpuSharing auto or time-slice, or restart the agent with --gpu-sharing auto');
  }
  return specMode === 'auto' ? agentMode : specMode;
}

/** How shared GPUs came out: under the MPS daemon of `pipeDirectory`, or time-sliced for `reason`. */
export type SharingOutcome = { mps: { pipeDirectory: string }; timeSliceReason?: undefined } | { mps: null; timeSliceReason: string };

/** Each of the agent's GPUs in the launch: its ranks (with SM shares under MPS) and how they share it. */
export function gpuShareStates(groups: readonly GpuGroup[], roleShares: SmShare, outcome: SharingOutcome): GpuShareState[] {
  return groups.map((g) => {
    const sharing = g.placements.length === 1 ? 'exclusive' : outcome.mps ? 'mps' : 'time-slice';
    const note = sharing === 'mps' ? `MPS (control daemon on ${outcome.mps!.pipeDirectory})` : sharing === 'time-slice' ? (outcome.timeSliceReason ?? null) : null;
    return {
      agentId: g.agentId,
      deviceIndex: g.deviceIndex,
      ranks: g.placements.map((p) => ({ role: p.role, rank: p.rank, smShare: sharing === 'mps' ? smShareOf(p, roleShares) : null })),
      sharing,
      note,
    };
  });
}

/**
 * The environment a rank needs on top of the agent's: on an MPS-shared GPU, the daemon's
 * pipe directory and its SM share (CUDA_MPS_ACTIVE_THREAD_PERCENTAGE); nothing elsewhere.
 */
export function sharingEnv(states: readonly GpuShareState[], placement: Pick<RankPlacement, 'role' | 'rank'>, pipeDirectory: string | null): Record<string, string> {
  const gpu = states.find((s) => s.ranks.some((r) => r.role === placement.role && r.rank === placement.rank));
  if (!gpu || gpu.sharing !== 'mps' || !pipeDirectory) return {};
  const share = gpu.ranks.find((r) => r.role === placement.role && r.rank === placement.rank)?.smShare ?? null;
  return { CUDA_MPS_PIPE_DIRECTORY: pipeDirectory, ...(share !== null ? { CUDA_MPS_ACTIVE_THREAD_PERCENTAGE: String(share) } : {}) };
}

/** "GPU 0 (ffn 0, attention 0)" for each group. */
export function groupsText(groups: readonly GpuGroup[]): string {
  return groups.map((g) => `GPU ${g.deviceIndex} (${groupRanksText(g)})`).join(', ');
}

/**
 * The warning for shared GPUs left time-sliced: which, why, what it costs and the fix.
 * `modeAsked`: the launch or the agent chose time-slice (the fix is another mode); else
 * MPS could not be had (the fix is the control program, or a GPU per rank).
 */
export function timeSliceWarning(shared: readonly GpuGroup[], reason: string, modeAsked: boolean, sharesIgnored: boolean): string {
  const are = shared.length > 1 ? 'are' : 'is';
  const cost = 'the driver time-slices their contexts, so at every layer crossing a rank waits for the other\'s slice (1A1F on one H100 measured about 40x slower steps this way; docs/agent.md, GPU sharing)';
  const fix = modeAsked
    ? 'use GPU sharing auto or mps (--gpu-sharing) to run them at once under CUDA MPS, or give each rank its own GPU'
    : 'make nvidia-cuda-mps-control available to the agent (PATH or /usr/local/nvidia/bin) so it can start MPS, or give each rank its own GPU';
  const shares = sharesIgnored ? '; the SM shares asked for apply under MPS only and are ignored' : '';
  return `${groupsText(shared)} ${are} shared without MPS (${reason}): ${cost}. To fix it, ${fix}${shares}`;
}
