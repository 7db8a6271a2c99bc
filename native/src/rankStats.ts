import type { ExpertStats, RankStats } from '@afd/shared';
import type { NativeEngineStats, NativeExpertStats } from './addon.js';
import type { ModelLoadSpec } from './modelSpec.js';

/** What RankStats carries beyond the engine counters. */
export interface RankStatsExtras {
  /** [numLayers] the model's MoE layers (ModelConfigSpec.layers with an moe FFN kind): which layers are dense. */
  moeLayers?: readonly boolean[];
  /** Weight bytes the rank holds (NativeEngineInfo.residentWeightBytes). */
  weightBytes?: number;
  /** Routed experts and the expert-parallel exchange (FFN ranks of MoE models). */
  experts?: ExpertStats;
}

/**
 * The native engine counters in the RankStats shape of shared/src/protocol/metrics.ts;
 * extras.moeLayers (from ModelConfigSpec.layers' FFN kinds) says which layers are dense.
 */
export function toRankStats(s: NativeEngineStats, role: RankStats['role'], rank: number, extras: RankStatsExtras = {}): RankStats {
  const isFfn = role === 'ffn';
  return {
    role,
    rank,
    steps: isFfn ? s.stepsServed : s.steps,
    stepTimeMs: { last: s.lastStepMs, avg: s.avgStepMs },
    numLayers: s.numLayers,
    numStages: s.numStages,
    a2fBytes: s.a2fBytes,
    f2aBytes: s.f2aBytes,
    a2fWireUs: s.a2fWireUs,
    f2aWireUs: s.f2aWireUs,
    wireBasis: { a2f: s.wireBasisA2f, f2a: s.wireBasisF2a },
    ffnComputeUs: s.ffnComputeMs * 1000,
    attnWaitForFfnUs: isFfn ? 0 : s.ffnWaitMs * 1000,
    graph: { hits: s.graphHits, misses: s.graphMisses, captures: s.graphCaptures },
    ffnLoop: isFfn
      ? {
          state: s.ffnLoopState,
          // The native counters use -1 for "no layer / stage" (idle); the protocol uses null.
          layer: s.ffnLoopLayer >= 0 ? s.ffnLoopLayer : null,
          stage: s.ffnLoopStage >= 0 ? s.ffnLoopStage : null,
          stepsServed: s.stepsServed,
          waitingMs: s.ffnLoopStateMs,
        }
      : null,
    kv: isFfn ? null : { blocksUsed: s.kvBlocksUsed, blocksTotal: s.kvBlocksTotal, blocksCached: 0, prefixQueryTokens: 0, prefixHitTokens: 0 }, // the serving layer fills these in
    ...(extras.moeLayers && extras.moeLayers.length === s.numLayers ? { moeLayers: [...extras.moeLayers] } : {}),
    ...(extras.weightBytes !== undefined ? { weightBytes: extras.weightBytes } : {}),
    ...(extras.experts ? { experts: extras.experts } : {}),
  };
}

/**
 * The experts an FFN rank holds (from its load spec) and, with expert parallelism, its
 * exchange counters; undefined for dense models.
 */
export function expertStatsOf(spec: ModelLoadSpec, ep: NativeExpertStats | null): ExpertStats | undefined {
  const E = spec.config.numExperts;
  if (E === 0) return undefined;
  const range = spec.expertRange ?? { start: 0, end: E };
  const zeros = (): number[] => new Array<number>(spec.config.numLayers).fill(0);
  return {
    numExperts: E,
    expertStart: range.start,
    expertEnd: range.end,
    expertParallel: ep !== null,
    numFfnRanks: ep?.numRanks ?? 1,
    tokensPerExpert: ep?.tokensPerExpert ?? [],
    dispatchBytes: { sent: ep?.dispatchSentBytes ?? zeros(), received: ep?.dispatchReceivedBytes ?? zeros() },
    combineBytes: { sent: ep?.combineSentBytes ?? zeros(), received: ep?.combineReceivedBytes ?? zeros() },
    exchangeUs: (ep?.exchangeMs ?? 0) * 1000,
  };
}
