/**
 * Metric types: the native runtime counters of one rank (`RankStats`, served as JSON on
 * GET /afd/stats and read by JS from the native getter at ~10 Hz), the serving-level
 * numbers of an attention/colocated rank (`ServingStats`), and the `MetricsSnapshot`
 * the agent streams to the console at ~10 Hz per rank.
 *
 * Counters (`...Total`, bytes, `...Us`) are cumulative since the rank started, so a
 * consumer derives rates from two snapshots; gauges are the value at snapshot time.
 * Per layer x stage arrays are nested `[numLayers][numStages]`.
 */
import { z } from 'zod';
import { processRoleSchema } from './role.js';

const count = z.number().int().nonnegative();
const nonneg = z.number().nonnegative();

/** States of the FFN daemon loop. */
export const ffnLoopStateSchema = z.enum(['idle', 'waiting-control', 'receiving', 'computing', 'sending']);
export type FfnLoopState = z.infer<typeof ffnLoopStateSchema>;

/** Where the FFN loop is right now (FFN ranks only). */
export const ffnLoopStatsSchema = z.object({
  /** Current state: idle (not started / stopped), waiting-control (blocked on the control plane), receiving, computing or sending. */
  state: ffnLoopStateSchema,
  /** Layer being received/computed/sent; null when idle or waiting for control. */
  layer: count.nullable(),
  /** Stage (0 or 1 with DBO) being received/computed/sent; null when idle or waiting for control. */
  stage: count.nullable(),
  /** Steps the loop has completed since start. */
  stepsServed: count,
  /** Milliseconds spent in the current state so far (a stuck peer shows as a growing value). */
  waitingMs: nonneg,
});
export type FfnLoopStats = z.infer<typeof ffnLoopStatsSchema>;

/** CUDA graph cache counters (all zero when graphs are off or on the CPU backend). */
export const graphStatsSchema = z.object({
  /** Steps that replayed a captured graph. */
  hits: count,
  /** Steps run eagerly because no graph matched their per-stage token counts. */
  misses: count,
  /** Graphs captured. */
  captures: count,
});

/** Paged KV cache occupancy (attention/colocated ranks only). */
export const kvStatsSchema = z.object({
  /** KV blocks in use. */
  blocksUsed: count,
  /** KV blocks allocated for the cache. */
  blocksTotal: count,
  /** Blocks whose KV is findable by content (prefix caching; in use or free). */
  blocksCached: count,
  /** Tokens of admitted sequences looked up in the prefix cache (cumulative; vllm:prefix_cache_queries). */
  prefixQueryTokens: count,
  /** Of those, tokens found, not computed (cumulative; vllm:prefix_cache_hits). */
  prefixHitTokens: count,
});

const layerStage = z.array(z.array(nonneg));

/**
 * How a direction's wire times were measured (native/src/comm/wire-time.h):
 * - `one-way`: that direction by itself, the receiver's arrival less the sender's send
 *   stamp on a clock both ranks read (TCP between ranks of one host);
 * - `round-trip/2`: no shared clock (TCP across hosts): half the round trip less the
 *   FFN rank's hold, the same number for both directions;
 * - `op-span`: device events around the send / receive on the stream (NCCL, peer memory),
 *   which include waiting for the peer: an upper bound, not a one-way time;
 * - `unavailable`: nothing timed yet.
 */
export const wireBasisSchema = z.enum(['one-way', 'round-trip/2', 'op-span', 'unavailable']);
export type WireBasis = z.infer<typeof wireBasisSchema>;

/** How each direction's wire times were measured (the basis of a2fWireUs and f2aWireUs). */
export const wireBasesSchema = z.object({
  /** Basis of a2fWireUs. */
  a2f: wireBasisSchema,
  /** Basis of f2aWireUs. */
  f2a: wireBasisSchema,
});
export type WireBases = z.infer<typeof wireBasesSchema>;

/** Bytes of one exchange of the FFN group per layer, by direction (cumulative). */
const exchangeBytesSchema = z.object({
  /** [numLayers] bytes this rank sent to the other FFN ranks. */
  sent: z.array(nonneg),
  /** [numLayers] bytes this rank received from the other FFN ranks. */
  received: z.array(nonneg),
});

/**
 * The routed experts a rank holds and, with expert parallelism, its part of the FFN
 * group's exchange (FFN ranks of MoE models).
 */
export const expertStatsSchema = z.object({
  /** Routed experts per MoE layer of the model (E). */
  numExperts: count,
  /** This rank holds experts [expertStart, expertEnd) of every MoE layer. */
  expertStart: count,
  expertEnd: count,
  /** Expert parallelism on: the experts are split over the FFN group (e -> floor(e * F / E)). */
  expertParallel: z.boolean(),
  /** FFN ranks the experts are split over (1 when expert parallelism is off). */
  numFfnRanks: z.int().min(1),
  /**
   * [numLayers][numExperts] token-expert pairs this rank's router sent to each expert,
   * cumulative (rows of dense layers stay 0; empty when expert parallelism is off: the
   * router then runs inside the FFN op and is not counted).
   */
  tokensPerExpert: z.array(z.array(count)),
  /** Dispatch: token-expert pairs sent to the rank owning the expert. */
  dispatchBytes: exchangeBytesSchema,
  /** Combine: the owners' expert outputs sent back to the source rank. */
  combineBytes: exchangeBytesSchema,
  /** Time inside the group's all-to-alls (wire and waiting for peers), cumulative microseconds. */
  exchangeUs: nonneg,
});
export type ExpertStats = z.infer<typeof expertStatsSchema>;

/** Native runtime counters of one rank. */
/** One KV-transfer link of prefill/decode disaggregation, as its attention rank counts it (cumulative). */
export const pdLinkStatsSchema = z.object({
  /** The prefill rank at the other end. */
  prefillRank: count,
  /** Whether the attention rank holds a connection to it now. */
  connected: z.boolean(),
  /** Prompts whose KV came over this link. */
  transfers: count,
  /** KV (and recurrent-state) bytes received. */
  bytes: nonneg,
  /** Time from request sent to last byte received, summed over transfers, ms (prefill + transfer). */
  transferMs: nonneg,
  /** The prefill rank's own prefill time, summed, ms (transferMs minus this is the wire and queueing). */
  prefillMs: nonneg,
  /** Bytes per second of the most recent transfer (bytes over its time less its prefill time); 0 before one. */
  lastBytesPerSecond: nonneg,
  /** Times the prefill rank was lost with a prefill of this rank in flight. */
  lost: count,
  /** How the link moves KV now: peer = copied from the prefill rank's memory (one host), tcp = bytes over the socket. */
  transport: z.enum(['peer', 'tcp']).default('tcp'),
});
export type PdLinkStats = z.infer<typeof pdLinkStatsSchema>;

/** Prefill/decode disaggregation counters of a rank (wPxAyF topologies). */
export const pdStatsSchema = z.object({
  /** Attention ranks: one entry per prefill rank; [] on prefill ranks. */
  links: z.array(pdLinkStatsSchema),
  /** Attention ranks: prompts prefilled on the rank itself, by reason (short, cached_here, no_free_blocks, prefill_ranks_down, ...). */
  localPrefills: z.record(z.string(), count),
  /** Prefill ranks: prefills served (KV sent), failed, in flight, and KV bytes sent; zeros on attention ranks. */
  served: z.object({ prefills: count, failed: count, inFlight: count, bytesSent: nonneg, connections: count }),
});
export type PdStats = z.infer<typeof pdStatsSchema>;

export const rankStatsSchema = z
  .object({
    /** Role of the rank. */
    role: processRoleSchema,
    /** Rank within its role. */
    rank: count,
    /** Steps completed (attention: engine steps; ffn: steps served). */
    steps: count,
    /** Step wall time in milliseconds. */
    stepTimeMs: z.object({
      /** Duration of the most recent step. */
      last: nonneg,
      /** Mean over all steps so far (0 before the first step). */
      avg: nonneg,
    }),
    /** Decoder layers of the model (rows of the per layer x stage arrays). */
    numLayers: count,
    /** Stages per step the arrays have room for: 1, or 2 with dual-batch overlap (columns). */
    numStages: z.number().int().min(1),
    /** [numLayers][numStages] bytes sent attention -> FFN (hidden states and router logits), cumulative. */
    a2fBytes: layerStage,
    /** [numLayers][numStages] bytes sent FFN -> attention (FFN outputs), cumulative. */
    f2aBytes: layerStage,
    /** [numLayers][numStages] wire time of the most recent sampled A->F transfer, microseconds (basis: wireBasis.a2f). */
    a2fWireUs: layerStage,
    /** [numLayers][numStages] wire time of the most recent sampled F->A transfer, microseconds (basis: wireBasis.f2a). */
    f2aWireUs: layerStage,
    /** How a2fWireUs and f2aWireUs were measured; absent from ranks that do not say (then unknown). */
    wireBasis: wireBasesSchema.optional(),
    /**
     * Dual-batch overlap: true when a step may run two stages (s0 and s1), false when only
     * s0 runs (the s1 column stays empty); absent when the rank does not say.
     */
    dbo: z.boolean().optional(),
    /** FFN / expert compute time, cumulative microseconds (0 on attention ranks). */
    ffnComputeUs: nonneg,
    /** Time attention waited for FFN outputs (the bubble), cumulative microseconds (0 on FFN ranks). */
    attnWaitForFfnUs: nonneg,
    /** CUDA graph cache counters. */
    graph: graphStatsSchema,
    /** FFN loop position; null on attention and colocated ranks. */
    ffnLoop: ffnLoopStatsSchema.nullable(),
    /** KV cache occupancy; null on FFN ranks (they hold no KV cache). */
    kv: kvStatsSchema.nullable(),
    /**
     * [numLayers] true where the layer's FFN half is MoE, false where it is a dense MLP
     * (e.g. DeepSeek's first_k_dense_replace layers); absent when the rank does not say.
     */
    moeLayers: z.array(z.boolean()).optional(),
    /** Weight bytes this rank holds (mapped on the CPU, uploaded on a device); absent when unknown. */
    weightBytes: nonneg.optional(),
    /** Routed experts this rank holds and the expert-parallel exchange; absent on attention ranks and for dense models. */
    experts: expertStatsSchema.optional(),
    /** Prefill/decode disaggregation (KV transfers from prefill ranks); absent without prefill ranks. */
    pd: pdStatsSchema.optional(),
  })
  .superRefine((s, ctx) => {
    for (const key of ['a2fBytes', 'f2aBytes', 'a2fWireUs', 'f2aWireUs'] as const) {
      const rows = s[key];
      if (rows.length !== s.numLayers || rows.some((r) => r.length !== s.numStages)) {
        ctx.addIssue({ code: 'custom', path: [key], message: `must be [numLayers=${s.numLayers}][numStages=${s.numStages}]` });
      }
    }
    if (s.moeLayers && s.moeLayers.length !== s.numLayers) {
      ctx.addIssue({ code: 'custom', path: ['moeLayers'], message: `must have numLayers=${s.numLayers} entries` });
    }
  });
export type RankStats = z.infer<typeof rankStatsSchema>;

/** Serving-level numbers of an attention or colocated rank (vLLM-style). */
export const servingStatsSchema = z.object({
  /** Requests being generated now (gauge). */
  runningRequests: count,
  /** Requests queued, not yet scheduled (gauge). */
  waitingRequests: count,
  /** Prompt tokens processed, cumulative. */
  promptTokensTotal: count,
  /** Generated tokens, cumulative. */
  generationTokensTotal: count,
  /** Requests finished, cumulative. */
  requestsFinishedTotal: count,
  /** Output tokens per second over the last second (gauge). */
  outputTokensPerSecond: nonneg,
  /** Fraction of KV blocks in use, 0..1 (gauge). */
  kvUsage: z.number().min(0).max(1),
});
export type ServingStats = z.infer<typeof servingStatsSchema>;

/** What the agent streams to the console per rank at ~10 Hz. */
export const metricsSnapshotSchema = z.object({
  /** Agent-side wall clock when the snapshot was taken, Unix epoch milliseconds. */
  timestampMs: nonneg,
  /** Native runtime counters of the rank (role and rank identify it). */
  stats: rankStatsSchema,
  /** Serving numbers; null on FFN ranks. */
  serving: servingStatsSchema.nullable(),
});
export type MetricsSnapshot = z.infer<typeof metricsSnapshotSchema>;

/** A RankStats with every counter zero, e.g. before the engine starts. */
export function emptyRankStats(role: RankStats['role'], rank: number, numLayers: number, numStages: number): RankStats {
  const grid = (): number[][] => Array.from({ length: numLayers }, () => new Array<number>(numStages).fill(0));
  return {
    role,
    rank,
    steps: 0,
    stepTimeMs: { last: 0, avg: 0 },
    numLayers,
    numStages,
    a2fBytes: grid(),
    f2aBytes: grid(),
    a2fWireUs: grid(),
    f2aWireUs: grid(),
    wireBasis: { a2f: 'unavailable', f2a: 'unavailable' },
    ffnComputeUs: 0,
    attnWaitForFfnUs: 0,
    graph: { hits: 0, misses: 0, captures: 0 },
    ffnLoop: role === 'ffn' ? { state: 'idle', layer: null, stage: null, stepsServed: 0, waitingMs: 0 } : null,
    kv: role === 'ffn' ? null : { blocksUsed: 0, blocksTotal: 0, blocksCached: 0, prefixQueryTokens: 0, prefixHitTokens: 0 },
  };
}
