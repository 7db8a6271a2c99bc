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
 *
 * Extensions: the FFN ranks as one EP group (dispatch and combine all-to-alls around the
 * FFN, which sees the rows of the whole group split over y: the group is simulated as y
 * blocks of this block's size), the gate on the attention side (gateSide.ts), and ranks
 * sharing a device (sharedDevice.ts: CPU cores, or MPS SM shares).
 */
import type { LayerCosts } from './costs.js';
import { allToAllMs, ffnEpLayerMs } from './expertParallel.js';
import { a2fBytesPerToken, gateLayerMs, type GateSide } from './gateSide.js';
import { cpuSlowdowns, mpsSlowdown, type SharedDevice } from './sharedDevice.js';

export interface AfdShape {
  /** Attention ranks x and FFN ranks y (a GPU each). */
  attention: number;
  ffn: number;
  /** Micro-batches per step: 1 (no overlap), 2 (DBO) or more. */
  stages: number;
  /** The y FFN ranks form one EP group (each 1/y of the experts, an all-to-all per layer: expertParallel.ts); default false. */
  ffnEp?: boolean;
  /** Where the MoE router runs (gateSide.ts); default 'ffn'. */
  gate?: GateSide;
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

/** The per-layer phases of one block, by stage rows: what the event loop schedules. */
interface BlockPhases {
  attentionMs(rows: number): number;
  a2fBytes(rows: number): number;
  /** The FFN rank's dispatch all-to-all, compute, and combine all-to-all for the block's `rows`. */
  dispatchMs(rows: number): number;
  ffnMs(rows: number): number;
  combineMs(rows: number): number;
}

function blockPhases(costs: LayerCosts, shape: AfdShape, ranks: number, w: Workload): BlockPhases {
  const gate = shape.gate ?? 'ffn';
  const ep = shape.ffnEp ? shape.ffn : 1;
  const onAttention = (rows: number) => (gate === 'attention' ? gateLayerMs(costs, rows) : 0);
  return {
    attentionMs: (rows) => costs.attentionMs(rows, w.context) + onAttention(rows),
    a2fBytes: (rows) => rows * a2fBytesPerToken(costs, gate),
    // An EP group of y ranks: each rank's FFN sees the rows of every block (y of this size).
    dispatchMs: (rows) => allToAllMs(costs, rows * ranks, ep),
    ffnMs: (rows) => Math.max(0, ffnEpLayerMs(costs, rows * ranks * ep, ep) - onAttention(rows * ranks)),
    combineMs: (rows) => allToAllMs(costs, rows * ranks, ep),
  };
}

/** Scales a compute event's nominal ms: event index (in scheduling order), role, nominal. */
type Scale = (i: number, role: 'attention' | 'ffn', ms: number) => number;

function runBlock(costs: LayerCosts, ph: BlockPhases, ranks: number, stages: number, w: Workload, scale: Scale) {
  const sb = stageBatches(w.batchPerRank, stages);
  const attnFree = new Array<number>(ranks).fill(0);
  const attnLink = new Array<number>(ranks).fill(0);
  // ready[r][s]: when the FFN output of the previous layer's stage s reached rank r.
  const ready = Array.from({ length: ranks }, () => new Array<number>(stages).fill(0));
  const intervals: { start: number; end: number }[] = [];
  const compute = (start: number, role: 'attention' | 'ffn', ms: number): number => {
    const end = start + scale(intervals.length, role, ms);
    intervals.push({ start, end });
    return end;
  };
  let ffnFree = 0;
  let ffnLink = 0;
  let ffnBusyMs = 0;
  for (let l = 0; l < costs.numLayers; l++) {
    for (let s = 0; s < stages; s++) {
      const rows = sb[s]!;
      const bytes = ph.a2fBytes(rows);
      let arrived = 0;
      for (let r = 0; r < ranks; r++) {
        attnFree[r] = compute(Math.max(attnFree[r]!, ready[r]![s]!), 'attention', ph.attentionMs(rows));
        attnLink[r] = Math.max(attnLink[r]!, attnFree[r]!) + costs.linkTransferMs(bytes);
        arrived = Math.max(arrived, attnLink[r]! + costs.linkLatencyMs);
      }
      const start = Math.max(ffnFree, arrived) + ph.dispatchMs(rows);
      const end = compute(start, 'ffn', ph.ffnMs(rows));
      ffnBusyMs += end - start;
      ffnFree = end + ph.combineMs(rows);
      for (let r = 0; r < ranks; r++) {
        ffnLink = Math.max(ffnLink, ffnFree) + costs.linkTransferMs(rows * costs.bytesPerToken);
        ready[r]![s] = ffnLink + costs.linkLatencyMs;
      }
    }
  }
  return { stepMs: Math.max(...ready.flat()), ffnBusyMs, intervals };
}

const unscaled: Scale = (_i, _role, ms) => ms;

/** One block's step: `ranks` attention ranks on one FFN rank; returns the step ms and the FFN's busy ms. */
export function simulateBlock(costs: LayerCosts, ranks: number, stages: number, w: Workload, shape?: Pick<AfdShape, 'ffn' | 'ffnEp' | 'gate'>): { stepMs: number; ffnBusyMs: number } {
  const r = runBlock(costs, blockPhases(costs, { attention: ranks, ffn: 1, stages, ...shape }, ranks, w), ranks, stages, w, unscaled);
  return { stepMs: r.stepMs, ffnBusyMs: r.ffnBusyMs };
}

export interface SimulateOptions {
  /** Ranks sharing a device (sharedDevice.ts); absent: a device per rank. */
  device?: SharedDevice;
}

/** The blocks of a shape, each distinct size once with how many blocks have it, simulated (and rescaled on a shared device). */
function simulateBlocks(costs: LayerCosts, shape: AfdShape, w: Workload, device?: SharedDevice) {
  const all = blockSizes(shape.attention, shape.ffn);
  const sizes = [...new Set(all)].map((ranks) => ({ ranks, copies: all.filter((n) => n === ranks).length, ph: blockPhases(costs, shape, ranks, w) }));
  if (device?.kind === 'mps') {
    const f = { attention: mpsSlowdown(costs, device, 'attention'), ffn: mpsSlowdown(costs, device, 'ffn') };
    return sizes.map((b) => ({ ...b, ...runBlock(costs, b.ph, b.ranks, shape.stages, w, (_i, role, ms) => ms * f[role]) }));
  }
  let factors = sizes.map(() => [] as number[]);
  let runs = sizes.map((b, k) => runBlock(costs, b.ph, b.ranks, shape.stages, w, (i, _role, ms) => ms * (factors[k]![i] ?? 1)));
  if (device?.kind !== 'cpu') return sizes.map((b, k) => ({ ...b, ...runs[k]! }));
  // Fixed point of schedule <-> slowdowns over every thread of the topology (all blocks share the cores).
  for (let round = 0; round < 200; round++) {
    const flat = runs.flatMap((r, k) => r.intervals.map((iv) => ({ ...iv, copies: sizes[k]!.copies })));
    const measured = cpuSlowdowns(flat, device.cores);
    let at = 0;
    let moved = 0;
    factors = runs.map((r, k) => r.intervals.map((_iv, i) => {
      const old = factors[k]![i] ?? 1;
      const next = (old + measured[at++]!) / 2;
      moved = Math.max(moved, Math.abs(next - old));
      return next;
    }));
    runs = sizes.map((b, k) => runBlock(costs, b.ph, b.ranks, shape.stages, w, (i, _role, ms) => ms * (factors[k]![i] ?? 1)));
    if (moved < 1e-12) break;
  }
  return sizes.map((b, k) => ({ ...b, ...runs[k]! }));
}

/** TPOT and tokens/s of xAyF with `stages` micro-batches (an EP group of FFN ranks, the gate side and a shared device as asked). */
export function simulateAfd(costs: LayerCosts, shape: AfdShape, w: Workload, opts: SimulateOptions = {}): StepPrediction {
  const blocks = simulateBlocks(costs, shape, w, opts.device);
  const tokensPerS = blocks.reduce((sum, b) => sum + (b.copies * b.ranks * w.batchPerRank * 1000) / b.stepMs, 0);
  const slowest = blocks.reduce((a, b) => (b.stepMs > a.stepMs ? b : a));
  // Under MPS every GPU hosts one attention rank, y of them an FFN rank beside it.
  const gpus = opts.device?.kind === 'mps' ? shape.attention : shape.attention + shape.ffn;
  return { tpotMs: slowest.stepMs, tokensPerS, gpus, tokensPerSPerGpu: tokensPerS / gpus, ffnBusy: slowest.ffnBusyMs / slowest.stepMs };
}

/**
 * One colocated replica on one GPU: both halves in turn, nothing crosses. On a shared CPU
 * device the `replicas` threads (all always busy) share its cores: max(1, replicas / cores).
 */
export function simulateColocated(costs: LayerCosts, w: Workload, opts: SimulateOptions & { replicas?: number } = {}): StepPrediction {
  const slowdown = opts.device?.kind === 'cpu' ? Math.max(1, (opts.replicas ?? 1) / opts.device.cores) : 1;
  const ffnMs = costs.numLayers * costs.ffnMs(w.batchPerRank) * slowdown;
  const stepMs = costs.numLayers * costs.attentionMs(w.batchPerRank, w.context) * slowdown + ffnMs;
  const tokensPerS = (w.batchPerRank * 1000) / stepMs;
  return { tpotMs: stepMs, tokensPerS, gpus: 1, tokensPerSPerGpu: tokensPerS, ffnBusy: ffnMs / stepMs };
}
