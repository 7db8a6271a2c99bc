/**
 * Expert parallelism in the planner: n GPUs as one EP group, each holding 1/n of the
 * routed experts, the tokens of every rank dispatched to the experts' owners and combined
 * back once per layer (two all-to-alls).
 *
 * Assumptions (also in docs/planner.md):
 * - Routing is uniform: each of a token's top-k experts sits on another rank with
 *   probability (n-1)/n, so one rank sends rows x topK x (n-1)/n hidden states out in the
 *   dispatch and receives as many back in the combine (no de-duplication of copies bound
 *   for the same rank; a dense model counts top-k 1).
 * - Each all-to-all costs one hop of the link: its latency plus the bytes one rank sends
 *   at the link's per-GPU bandwidth (ranks send in parallel; no congestion).
 * - Per-rank FFN time: the profile's curve for that EP size when it has one (measured, so
 *   with whatever imbalance the measurement had); else the 1-GPU curve divided by n (each
 *   rank reads 1/n of the experts and computes 1/n of the rows), evaluated at the tokens of
 *   the whole group times the busiest rank's rows over the mean (epImbalance.ts: uniform
 *   routing; the slowest rank bounds the layer). The shared expert and router in the curve
 *   scale with that factor too, a small overstatement. `epBalanced` on the costs turns the
 *   imbalance off (every rank at the mean).
 */
import type { LayerCosts } from './costs.js';
import { imbalanceFactor } from './epImbalance.js';
import type { StepPrediction, Workload } from './stepSimulator.js';

/** One all-to-all (dispatch or combine) of one layer for `rowsPerRank` tokens on each of `epSize` ranks, ms. */
export function allToAllMs(costs: LayerCosts, rowsPerRank: number, epSize: number): number {
  if (epSize <= 1) return 0;
  const topK = costs.moe?.topK ?? 1;
  const bytes = rowsPerRank * topK * costs.bytesPerToken * ((epSize - 1) / epSize);
  return costs.linkLatencyMs + costs.linkTransferMs(bytes);
}

/** An EP group must split the routed experts evenly (the engine places E / n experts per rank). */
export const splitsExperts = (costs: LayerCosts, epSize: number): boolean => costs.moe !== undefined && costs.moe.numExperts % epSize === 0;

/** Whether the profile measured the FFN at this EP size (else it is scaled from the 1-GPU curve). */
export const ffnEpMeasured = (costs: LayerCosts, epSize: number): boolean => epSize <= 1 || costs.ffnEpMs?.(1, epSize) !== undefined;

/** The busiest rank's routed rows over the mean in an EP group of `epSize` (1 when balanced or dense). */
export function epImbalance(costs: LayerCosts, groupTokens: number, epSize: number): number {
  if (costs.epBalanced || !costs.moe) return 1;
  return imbalanceFactor(groupTokens, costs.moe.topK, costs.moe.numExperts, epSize);
}

/** Per-rank FFN of one layer in an EP group of `epSize` running `groupTokens` rows in all: the busiest rank's, ms. */
export function ffnEpLayerMs(costs: LayerCosts, groupTokens: number, epSize: number): number {
  if (epSize <= 1) return costs.ffnMs(groupTokens);
  return costs.ffnEpMs?.(groupTokens, epSize) ?? costs.ffnMs(groupTokens * epImbalance(costs, groupTokens, epSize)) / epSize;
}

/** The row note for an EP size: where its FFN figure comes from. */
export function ffnEpNote(costs: LayerCosts, epSize: number): string {
  if (ffnEpMeasured(costs, epSize)) return `FFN at EP ${epSize} measured`;
  const ranks = costs.epBalanced ? 'ranks taken as balanced' : "at the busiest rank's rows (uniform routing)";
  return `FFN at EP ${epSize} scaled: ffn(tokens of the group) / ${epSize} (no EP curve in the profile), ${ranks}`;
}

/**
 * EP-only serving: `epSize` GPUs, each with the attention of its own batch and 1/epSize
 * of the experts; per layer attention, dispatch, FFN, combine, one after the other.
 */
export function simulateEpOnly(costs: LayerCosts, epSize: number, w: Workload): StepPrediction {
  const rows = w.batchPerRank;
  const ffnMs = ffnEpLayerMs(costs, rows * epSize, epSize);
  const layerMs = costs.attentionMs(rows, w.context) + 2 * allToAllMs(costs, rows, epSize) + ffnMs;
  const stepMs = costs.numLayers * layerMs;
  const tokensPerS = (epSize * rows * 1000) / stepMs;
  return { tpotMs: stepMs, tokensPerS, gpus: epSize, tokensPerSPerGpu: tokensPerS / epSize, ffnBusy: (costs.numLayers * ffnMs) / stepMs };
}
