/**
 * Rank mapping of a topology xAyF.
 *
 * World order: `[F0 .. F(y-1), A0 .. A(x-1)]`, so FFN rank f is world rank f and
 * attention rank a is world rank y + a.
 *
 * Blocks: the x attention ranks are cut into y contiguous blocks, one per FFN rank,
 * whose sizes differ by at most one; the larger blocks come first. With
 * base = floor(x / y) and extra = x mod y, FFN rank f serves
 * `[f * base + min(f, extra), +base + (f < extra ? 1 : 0))`. Example 3A2F: F0 <- A0, A1; F1 <- A2.
 *
 * Peers: an attention rank has exactly one FFN peer (the owner of its block); an FFN rank's
 * peers are the attention ranks of its block, in rank order. That order is the peer index
 * used by the control payload and by the data plane's concatenation along tokens.
 *
 * Control plane: the FFN rank is the hub of its block (attention ranks need no listen
 * address of their own). Once per step every attention rank of the block publishes its
 * own per-stage token counts to the FFN rank; the first request of a step makes the FFN
 * rank call the block's idle ranks in (they answer with empty counts, one placeholder
 * row); the FFN rank merges the counts into one control payload (peer-index order),
 * runs its layer loop from it and sends the merged payload back to every peer, so all
 * ranks of a block step in lockstep.
 */
import type { Topology } from './spec.js';

/** The two disaggregated roles. */
export type AfdRole = 'attention' | 'ffn';

/** One rank of the world. */
export interface WorldRank {
  /** Position in the world order [F0..F(y-1), A0..A(x-1)]. */
  worldRank: number;
  /** Role of the rank. */
  role: AfdRole;
  /** Rank within its role. */
  rank: number;
}

/** The contiguous block of attention ranks an FFN rank serves. */
export interface AttentionBlock {
  /** The FFN rank that owns the block. */
  ffnRank: number;
  /** First attention rank of the block (also the control-payload sender). */
  start: number;
  /** Number of attention ranks in the block (>= 1). */
  size: number;
}

function checkRank(topology: Topology, role: AfdRole, rank: number): void {
  const count = role === 'attention' ? topology.attention.ranks : topology.ffn.ranks;
  if (!Number.isSafeInteger(rank) || rank < 0 || rank >= count) {
    throw new RangeError(`${role} rank ${rank} does not exist in ${topology.name} (valid: 0..${count - 1})`);
  }
}

/** Every rank in world order: FFN ranks first, then attention ranks. */
export function worldOrder(topology: Topology): WorldRank[] {
  const out: WorldRank[] = [];
  for (let f = 0; f < topology.ffn.ranks; f++) out.push({ worldRank: f, role: 'ffn', rank: f });
  for (let a = 0; a < topology.attention.ranks; a++) out.push({ worldRank: topology.ffn.ranks + a, role: 'attention', rank: a });
  return out;
}

/** World rank of a role rank. */
export function worldRankOf(topology: Topology, role: AfdRole, rank: number): number {
  checkRank(topology, role, rank);
  return role === 'ffn' ? rank : topology.ffn.ranks + rank;
}

/** Role and role rank of a world rank. */
export function roleRankOf(topology: Topology, worldRank: number): WorldRank {
  if (!Number.isSafeInteger(worldRank) || worldRank < 0 || worldRank >= topology.worldSize) {
    throw new RangeError(`world rank ${worldRank} does not exist in ${topology.name} (valid: 0..${topology.worldSize - 1})`);
  }
  const y = topology.ffn.ranks;
  return worldRank < y ? { worldRank, role: 'ffn', rank: worldRank } : { worldRank, role: 'attention', rank: worldRank - y };
}

/** The attention block served by one FFN rank. */
export function attentionBlockOf(topology: Topology, ffnRank: number): AttentionBlock {
  checkRank(topology, 'ffn', ffnRank);
  const base = Math.floor(topology.attention.ranks / topology.ffn.ranks);
  const extra = topology.attention.ranks % topology.ffn.ranks;
  return { ffnRank, start: ffnRank * base + Math.min(ffnRank, extra), size: base + (ffnRank < extra ? 1 : 0) };
}

/** All blocks, one per FFN rank, in FFN rank order; together they cover A0..A(x-1) once. */
export function attentionBlocks(topology: Topology): AttentionBlock[] {
  return Array.from({ length: topology.ffn.ranks }, (_, f) => attentionBlockOf(topology, f));
}

/** The FFN rank whose block contains an attention rank. */
export function ffnRankOf(topology: Topology, attentionRank: number): number {
  checkRank(topology, 'attention', attentionRank);
  const base = Math.floor(topology.attention.ranks / topology.ffn.ranks);
  const extra = topology.attention.ranks % topology.ffn.ranks;
  const bigSpan = extra * (base + 1); // attention ranks covered by the larger blocks
  return attentionRank < bigSpan ? Math.floor(attentionRank / (base + 1)) : extra + Math.floor((attentionRank - bigSpan) / base);
}

/** Index of an attention rank inside its block (its slot in control payloads and concatenation). */
export function peerIndexOf(topology: Topology, attentionRank: number): number {
  return attentionRank - attentionBlockOf(topology, ffnRankOf(topology, attentionRank)).start;
}

/** The ranks a rank exchanges hidden states with: the FFN owner of an attention rank, or an FFN rank's block. */
export function peersOf(topology: Topology, role: AfdRole, rank: number): WorldRank[] {
  if (role === 'attention') {
    const f = ffnRankOf(topology, rank);
    return [{ worldRank: f, role: 'ffn', rank: f }];
  }
  const block = attentionBlockOf(topology, rank);
  return Array.from({ length: block.size }, (_, i) => ({
    worldRank: topology.ffn.ranks + block.start + i,
    role: 'attention' as const,
    rank: block.start + i,
  }));
}

/** One control-plane route: the attention ranks that publish their counts to an FFN rank (the hub). */
export interface ControlRoute {
  /** The FFN rank that merges the block's counts and drives the step. */
  ffnRank: number;
  /** Attention ranks that publish their counts to it each step, in peer-index order (the payload's order). */
  peerAttentionRanks: number[];
}

/** The control route into one FFN rank. */
export function controlRouteOf(topology: Topology, ffnRank: number): ControlRoute {
  const block = attentionBlockOf(topology, ffnRank);
  return {
    ffnRank,
    peerAttentionRanks: Array.from({ length: block.size }, (_, i) => block.start + i),
  };
}

/** Every control route, one per FFN rank. */
export function controlRoutes(topology: Topology): ControlRoute[] {
  return Array.from({ length: topology.ffn.ranks }, (_, f) => controlRouteOf(topology, f));
}

/** The FFN rank (control hub) an attention rank publishes its per-step counts to. */
export function controlTargetOf(topology: Topology, attentionRank: number): number {
  return ffnRankOf(topology, attentionRank);
}
