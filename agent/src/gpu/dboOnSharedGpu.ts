/**
 * DBO where an attention rank shares its GPU with an FFN rank. Dual-batch overlap wins when
 * one stage's attention runs while the other stage's FFN runs elsewhere; on one GPU both
 * halves draw on the same memory bandwidth, and the two stages' FFN halves each read the
 * routed experts' weights (at c=64 on Qwen3-30B-A3B: ~126 of 128 experts per layer for the
 * whole batch, ~111 per 32-token stage, so ~1.76x the weight traffic). Unless the launch
 * keeps it (afd.dbo.onSharedGpu "keep"), DBO is turned off for those attention ranks, and
 * the launch log says so.
 */
import { gpuGroups, type GpuGroup, type LaunchSpec, type RankPlacement } from '@afd/shared';

export interface DboSharedGpuDecision {
  /** Attention ranks (by rank number) that run without DBO. */
  offRanks: ReadonlySet<number>;
  /** The launch log's line, or null when nothing changed. */
  note: string | null;
}

const NONE: DboSharedGpuDecision = { offRanks: new Set(), note: null };

/** Which of `agentId`'s attention ranks lose DBO because an FFN rank shares their GPU. */
export function dboOnSharedGpus(spec: LaunchSpec, agentId: string): DboSharedGpuDecision {
  if (spec.mode !== 'afd' || !spec.afd.dbo.enabled || spec.afd.dbo.onSharedGpu === 'keep') return NONE;
  const mixed = gpuGroups(spec.placements.filter((p) => p.agentId === agentId)).filter(
    (g) => g.placements.some((p) => p.role === 'attention') && g.placements.some((p) => p.role === 'ffn'),
  );
  if (mixed.length === 0) return NONE;
  const offRanks = new Set(mixed.flatMap((g) => g.placements.filter((p) => p.role === 'attention').map((p) => p.rank)));
  const where = mixed.map((g) => `GPU ${g.deviceIndex} (${ranksOf(g, 'attention')} with ${ranksOf(g, 'ffn')})`).join(', ');
  return {
    offRanks,
    note:
      `DBO off for attention rank${offRanks.size > 1 ? 's' : ''} ${[...offRanks].sort((a, b) => a - b).join(', ')}: ${where} share one GPU, ` +
      `where the two stages' FFN halves read the expert weights twice through the same memory and the overlap cannot pay for itself ` +
      `(docs/agent.md, GPU sharing). Give afd.dbo.onSharedGpu "keep" to run it anyway.`,
  };
}

function ranksOf(g: GpuGroup, role: RankPlacement['role']): string {
  const ranks = g.placements.filter((p) => p.role === role).map((p) => p.rank);
  return `${role} ${ranks.join(', ')}`;
}

/** The spec one placement's rank is built from: DBO off where the decision says so. */
export function specForPlacement(spec: LaunchSpec, placement: Pick<RankPlacement, 'role' | 'rank'>, decision: DboSharedGpuDecision): LaunchSpec {
  if (spec.mode !== 'afd' || placement.role !== 'attention' || !decision.offRanks.has(placement.rank)) return spec;
  return { ...spec, afd: { ...spec.afd, dbo: { ...spec.afd.dbo, enabled: false } } };
}
