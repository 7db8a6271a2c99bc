/**
 * The step simulator: one decode step of an xAyF topology as a schedule of events on
 * resources, fed by per-layer costs (costs.ts). Each attention rank computes, each FFN
 * rank computes, and each rank's link sends, one thing at a time, in the order the engine
 * runs them (layer by layer, stage by stage: native runtime/afd). An event starts when its
 * resource is free and its inputs have arrived:
 *
 *   attention(r, l, s)  after the FFN output of (l-1, s) reached rank r
 *   send A->F(r, l, s)  after attention(r, l, s), on rank r's link (busy for the bytes'
 *                       transfer; the hop's latency follows without holding the link)
 *   ffn(l, s)           after every rank of the block sent (l, s); rows of the whole block
 *   send F->A(r, l, s)  after ffn(l, s), one slice per rank on the FFN rank's link
 *
 * With one stage nothing overlaps (the step is the sum of its parts); with DBO's two stages
 * or N micro-batches, stage s+1's attention runs while stage s crosses and runs its FFN.
 * FFN ranks serve their blocks of attention ranks independently (x >= y, block sizes
 * differ by at most one: shared/src/topology), so each block size is simulated once.
 */
import type { LayerCosts } from './costs.js';

export interface AfdShape {
  /** Attention ranks x and FFN ranks y (a GPU each). */
  attention: number;
  ffn: number;
  /** Micro-batches per step: 1 (no overlap), 2 (DBO) or more. */
  stages: number;
}

export interface Workload {
  /** Sequences decoding on each attention rank. */
  batchPerRank: number;
  /** Context length of each sequence. */
  context: number;
}

export interface StepPrediction {
  /** Time per output token of every sequence: the slowest block's step, ms. */
  tpotMs: number;
  /** Output tokens per second of the whole topology. */
  tokensPerS: number;
  gpus: number;
  tokensPerSPerGpu: number;
  /** Share of the step each FFN rank computes (the rest it waits), of the slowest block. */
  ffnBusy: number;
}

/** Sizes of the attention blocks of xAyF: contiguous, differing by at most one. */
export function blockSizes(x: number, y: number): number[] {
  if (!Number.isInteger(x) || !Number.isInteger(y) || y < 1 || x < y) throw new Error(`topology ${x}A${y}F: need integers with x >= y >= 1`);
  return Array.from({ length: y }, (_, f) => Math.floor(x / y) + (f < x % y ? 1 : 0));
}

/** Sequences of each stage when `batch` splits into `stages` (earlier stages take the remainder). */
export function stageBatches(batch: number, stages: number): number[] {
  if (stages < 1 || stages > batch) throw new Error(`${stages} stages cannot split a batch of ${batch}`);
  return Array.from({ length: stages }, (_, s) => Math.floor(batch / stages) + (s < batch % stages ? 1 : 0));
}

/** One block's step: `ranks` attention ranks on one FFN rank; returns the step ms and the FFN's busy ms. */
export function simulateBlock(costs: LayerCosts, ranks: number, stages: number, w: Workload): { stepMs: number; ffnBusyMs: number } {
  const sb = stageBatches(w.batchPerRank, stages);
  const attnFree = new Array<number>(ranks).fill(0);
  const attnLink = new Array<number>(ranks).fill(0);
  // ready[r][s]: when the FFN output of the previous layer's stage s reached rank r.
  const ready = Array.from({ length: ranks }, () => new Array<number>(stages).fill(0));
  let ffnFree = 0;
  let ffnLink = 0;
  let ffnBusyMs = 0;
  for (let l = 0; l < costs.numLayers; l++) {
    for (let s = 0; s < stages; s++) {
      const rows = sb[s]!;
      const bytes = rows * costs.bytesPerToken;
      let arrived = 0;
      for (let r = 0; r < ranks; r++) {
        const start = Math.max(attnFree[r]!, ready[r]![s]!);
        attnFree[r] = start + costs.attentionMs(rows, w.context);
        attnLink[r] = Math.max(attnLink[r]!, attnFree[r]!) + costs.linkTransferMs(bytes);
        arrived = Math.max(arrived, attnLink[r]! + costs.linkLatencyMs);
      }
      const ffnMs = costs.ffnMs(rows * ranks);
      ffnFree = Math.max(ffnFree, arrived) + ffnMs;
      ffnBusyMs += ffnMs;
      for (let r = 0; r < ranks; r++) {
        ffnLink = Math.max(ffnLink, ffnFree) + costs.linkTransferMs(bytes);
        ready[r]![s] = ffnLink + costs.linkLatencyMs;
      }
    }
  }
  return { stepMs: Math.max(...ready.flat()), ffnBusyMs };
}

/** TPOT and tokens/s of xAyF with `stages` micro-batches. */
export function simulateAfd(costs: LayerCosts, shape: AfdShape, w: Workload): StepPrediction {
  const sizes = [...new Set(blockSizes(shape.attention, shape.ffn))];
  const blocks = sizes.map((ranks) => ({ ranks, ...simulateBlock(costs, ranks, shape.stages, w) }));
  const count = (ranks: number) => blockSizes(shape.attention, shape.ffn).filter((n) => n === ranks).length;
  const tokensPerS = blocks.reduce((sum, b) => sum + (count(b.ranks) * b.ranks * w.batchPerRank * 1000) / b.stepMs, 0);
  const slowest = blocks.reduce((a, b) => (b.stepMs > a.stepMs ? b : a));
  const gpus = shape.attention + shape.ffn;
  return { tpotMs: slowest.stepMs, tokensPerS, gpus, tokensPerSPerGpu: tokensPerS / gpus, ffnBusy: slowest.ffnBusyMs / slowest.stepMs };
}

/** One colocated replica on one GPU: both halves in turn, nothing crosses. */
export function simulateColocated(costs: LayerCosts, w: Workload): StepPrediction {
  const stepMs = costs.numLayers * (costs.attentionMs(w.batchPerRank, w.context) + costs.ffnMs(w.batchPerRank));
  const tokensPerS = (w.batchPerRank * 1000) / stepMs;
  return { tpotMs: stepMs, tokensPerS, gpus: 1, tokensPerSPerGpu: tokensPerS, ffnBusy: (costs.numLayers * costs.ffnMs(w.batchPerRank)) / stepMs };
}
