/**
 * A topology's full rank plan in one serializable object: what the console shows when a
 * user types "3A2F", and what tests compare against.
 */
import { z } from 'zod';
import { attentionBlocks, controlRoutes, worldOrder } from './mapping.js';
import type { Topology } from './spec.js';

const role = z.object({
  /** Ranks of the role. */
  ranks: z.int().positive(),
  /** Data-parallel replicas. */
  dp: z.int().positive(),
  /** Tensor-parallel ranks per replica. */
  tp: z.int().positive(),
});

/** A resolved topology with its world order, blocks and control routes. */
export const topologyPlanSchema = z.object({
  /** Canonical name, e.g. "3A2F". */
  name: z.string(),
  /** Attention parallelism. */
  attention: role,
  /** FFN parallelism. */
  ffn: role,
  /** Ranks in the world (x + y). */
  worldSize: z.int().positive(),
  /** World order [F0..F(y-1), A0..A(x-1)]. */
  world: z.array(
    z.object({
      /** Position in the world. */
      worldRank: z.int().nonnegative(),
      /** Role of the rank. */
      role: z.enum(['attention', 'ffn']),
      /** Rank within its role. */
      rank: z.int().nonnegative(),
    }),
  ),
  /** Per FFN rank, the contiguous attention ranks it serves (peer order). */
  blocks: z.array(
    z.object({
      /** The FFN rank. */
      ffnRank: z.int().nonnegative(),
      /** Its attention peers, ascending. */
      attentionRanks: z.array(z.int().nonnegative()).min(1),
      /** Attention ranks that publish their per-step counts to this FFN rank (the control hub). */
      controlPublishers: z.array(z.int().nonnegative()).min(1),
    }),
  ),
});
export type TopologyPlan = z.infer<typeof topologyPlanSchema>;

/** Builds the plan of a resolved topology. */
export function planTopology(topology: Topology): TopologyPlan {
  const routes = controlRoutes(topology);
  return {
    name: topology.name,
    attention: { ...topology.attention },
    ffn: { ...topology.ffn },
    worldSize: topology.worldSize,
    world: worldOrder(topology),
    blocks: attentionBlocks(topology).map((b, f) => ({
      ffnRank: b.ffnRank,
      attentionRanks: Array.from({ length: b.size }, (_, i) => b.start + i),
      controlPublishers: routes[f]!.peerAttentionRanks,
    })),
  };
}
