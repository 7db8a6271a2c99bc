import type { RankStats } from '@afd/shared';
import type { NativeEngineStats } from './index.js';

/**
 * The native engine counters in the RankStats shape of shared/src/protocol/metrics.ts;
 * moeLayers (the model's, ModelConfigSpec.moeLayers) says which layers are dense.
 */
export function toRankStats(s: NativeEngineStats, role: RankStats['role'], rank: number, moeLayers?: readonly boolean[]): RankStats {
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
    kv: isFfn ? null : { blocksUsed: s.kvBlocksUsed, blocksTotal: s.kvBlocksTotal },
    ...(moeLayers && moeLayers.length === s.numLayers ? { moeLayers: [...moeLayers] } : {}),
  };
}
