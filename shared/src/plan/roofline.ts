/**
 * A cost profile computed, not measured: a card's published figures (cards.ts) and a model's
 * shapes (modelShape.ts) through a roofline. Each half of a layer takes
 *
 *   max(bytes / (bandwidth x bandwidthEfficiency), flops / (peak x computeEfficiency)) + launchMs
 *
 * - attention, per layer, `batch` sequences at `context` tokens: the attention weights once,
 *   plus every sequence's KV cache (batch x context x KV bytes per token); flops 2 x weights
 *   per token plus the score and value products over the context. Once per step on top: the
 *   LM head (vocab x hidden, read once, 2 flops per weight per sequence).
 * - FFN, per layer, `tokens` rows: a dense layer reads its weights once; an MoE layer reads
 *   the experts the tokens touch, expected E x (1 - (1 - k/E)^T) of E for T tokens routed
 *   uniformly to k each, plus the shared expert; flops 2 x the active weights per token.
 *
 * One rank may be `gpus` GPUs acting as one (DP attention: every GPU holds the attention
 * weights and serves batch / gpus sequences; EP FFN: the experts spread evenly, every GPU
 * reads 1 / gpus of the bytes); sharding is ideal, the traffic inside the rank is not priced,
 * but the routed rows are not spread evenly: the FFN is the busiest GPU's (epImbalance.ts),
 * unless `epBalanced`.
 * The efficiency factors are one global set (ROOFLINE_DEFAULTS), not fitted per case.
 *
 * A profile also carries the memory fields of a measured one (memory.ts): the card's
 * published memory, the weights by role and the KV bytes per token from the shapes, so the
 * search drops what does not fit as it does for a measured profile.
 */
import { peakFlops, type CardSpec } from './cards.js';
import type { LayerCosts } from './costs.js';
import { imbalanceFactor } from './epImbalance.js';
import { transferMs, type LinkPreset } from './links.js';
import type { MemoryModel } from './memory.js';
import type { ModelShape } from './modelShape.js';
import { PROFILE_VERSION, type CostProfile } from './profile.js';

export interface RooflineOptions {
  /** Share of the published memory bandwidth a decode kernel reaches. */
  bandwidthEfficiency: number;
  /** Share of the dense tensor-core peak a decode GEMM / attention kernel reaches. */
  computeEfficiency: number;
  /** Fixed cost of each half of each layer (kernel launches, norms, routing), ms. */
  launchMsPerLayer: number;
  /** The GPUs of an EP rank taken as perfectly balanced (default false: the busiest GPU bounds the FFN). */
  epBalanced?: boolean;
}

/**
 * The global factors: 70% of HBM bandwidth (what decode GEMV/attention kernels commonly reach
 * on Hopper), 60% of the dense tensor peak, 15 us of launches per half-layer (CUDA graphs).
 * Assumptions, documented in docs/planner.md, the same for every card and case.
 */
export const ROOFLINE_DEFAULTS: RooflineOptions = { bandwidthEfficiency: 0.7, computeEfficiency: 0.6, launchMsPerLayer: 0.015 };

/** Expected distinct experts of `experts` that `tokens` tokens touch, each routed to `topK` uniformly. */
export function expectedExperts(experts: number, topK: number, tokens: number): number {
  if (experts <= 0) return 0;
  return experts * (1 - (1 - topK / experts) ** tokens);
}

/** Full-attention layers (hybrid models: the rest are linear attention). */
export const fullAttentionLayers = (m: ModelShape): number => m.numLayers - (m.linear?.layers ?? 0);

/** Weight elements of one Gated DeltaNet layer: in_proj q/k/v/z and b/a, the conv, out_proj (dt_bias, A_log, norm: negligible). */
export function linearAttentionParams(m: ModelShape): number {
  if (!m.linear) return 0;
  const { numKeyHeads, numValueHeads, keyHeadDim, valueHeadDim, convKernel } = m.linear;
  const key = numKeyHeads * keyHeadDim;
  const value = numValueHeads * valueHeadDim;
  const h = m.hiddenSize;
  return h * (2 * key + 2 * value + 2 * numValueHeads) + (2 * key + value) * convKernel + value * h;
}

/**
 * Bytes of one sequence's state in one Gated DeltaNet layer: the recurrent state
 * [Hv, Dk, Dv] in f32 and the conv window (convKernel - 1 inputs of the q/k/v channels).
 */
export function linearStateBytes(m: ModelShape): number {
  if (!m.linear) return 0;
  const { numKeyHeads, numValueHeads, keyHeadDim, valueHeadDim, convKernel } = m.linear;
  return numValueHeads * keyHeadDim * valueHeadDim * 4 + (convKernel - 1) * (2 * numKeyHeads * keyHeadDim + numValueHeads * valueHeadDim) * m.kvBytesPerElement;
}

/** Flops of one token in one Gated DeltaNet layer beyond its projections: decay, S^T k, the rank-1 update, S^T q (~8 Hv Dk Dv). */
function linearStateFlops(m: ModelShape): number {
  return m.linear ? 8 * m.linear.numValueHeads * m.linear.keyHeadDim * m.linear.valueHeadDim : 0;
}

/** Weight elements of one layer's full attention (projections in and out; q twice as wide with an output gate). */
export function attentionParams(m: ModelShape): number {
  const h = m.hiddenSize;
  if (m.mla) {
    const { qLoraRank, kvLoraRank, ropeDim, nopeDim, vDim } = m.mla;
    const qOut = m.numHeads * (nopeDim + ropeDim);
    const q = qLoraRank > 0 ? h * qLoraRank + qLoraRank * qOut : h * qOut;
    return q + h * (kvLoraRank + ropeDim) + kvLoraRank * m.numHeads * (nopeDim + vDim) + m.numHeads * vDim * h;
  }
  const qOut = m.numHeads * m.headDim;
  const qProj = m.attentionOutputGate ? 2 * qOut : qOut;
  const q = m.qLoraRank > 0 ? h * m.qLoraRank + m.qLoraRank * qProj : h * qProj;
  return q + 2 * h * m.numKvHeads * m.headDim + qOut * h;
}

/** KV-cache bytes of one token in one layer (MLA: the latent and the RoPE key). */
export function kvBytesPerToken(m: ModelShape): number {
  const elements = m.mla ? m.mla.kvLoraRank + m.mla.ropeDim : 2 * m.numKvHeads * m.headDim;
  return elements * m.kvBytesPerElement;
}

/** Attention flops of one query token against one cached position (scores and values). */
export function attentionFlopsPerPosition(m: ModelShape): number {
  if (m.mla) return m.numHeads * (2 * (m.mla.kvLoraRank + m.mla.ropeDim) + 2 * m.mla.kvLoraRank);
  return 4 * m.numHeads * m.headDim;
}

/** Weight elements of one routed expert, of the shared expert(s), of one dense FFN (gate, up, down). */
export const expertParams = (m: ModelShape): number => 3 * m.hiddenSize * m.moeIntermediate;
const sharedParams = (m: ModelShape): number => 3 * m.hiddenSize * m.sharedIntermediate;
const denseParams = (m: ModelShape): number => 3 * m.hiddenSize * m.denseIntermediate;

/** Weight elements an attention-role rank holds: every layer's attention, the embedding and the LM head (untied). */
export const attentionRoleParams = (m: ModelShape): number =>
  fullAttentionLayers(m) * attentionParams(m) + (m.linear?.layers ?? 0) * linearAttentionParams(m) + 2 * m.vocabSize * m.hiddenSize;

/** Weight elements an FFN-role rank holds: the dense FFNs, and every MoE layer's experts, shared expert and router. */
export function ffnRoleParams(m: ModelShape): number {
  const moeLayers = m.numLayers - m.denseLayers;
  return m.denseLayers * denseParams(m) + moeLayers * (m.experts * expertParams(m) + sharedParams(m) + m.hiddenSize * m.experts);
}

/** Resident weight elements of the whole model (embedding and LM head untied). */
export const modelParams = (m: ModelShape): number => attentionRoleParams(m) + ffnRoleParams(m);

/** The roofline of one piece of work on one GPU, ms. */
function rooflineMs(card: CardSpec, m: ModelShape, o: RooflineOptions, bytes: number, flops: number): number {
  return Math.max(bytes / (card.memoryBytesPerS * o.bandwidthEfficiency), flops / (peakFlops(card, m.bytesPerElement) * o.computeEfficiency)) * 1000;
}

/** The attention half of one decode step (every layer, plus the LM head) for `batch` sequences at `context`, ms. */
export function attentionStepMs(card: CardSpec, m: ModelShape, batch: number, context: number, gpus = 1, o: RooflineOptions = ROOFLINE_DEFAULTS): number {
  const seqs = batch / gpus; // DP attention: each GPU its share of the sequences
  const w = attentionParams(m);
  const layer = rooflineMs(card, m, o, w * m.bytesPerElement + seqs * context * kvBytesPerToken(m), seqs * (2 * w + context * attentionFlopsPerPosition(m))) + o.launchMsPerLayer;
  const head = m.vocabSize * m.hiddenSize;
  const lmHead = rooflineMs(card, m, o, head * m.bytesPerElement, seqs * 2 * head) + o.launchMsPerLayer;
  // Gated DeltaNet layers: the weights once, every sequence's state read and written, no context term.
  const lw = linearAttentionParams(m);
  const linear = m.linear
    ? m.linear.layers * (rooflineMs(card, m, o, lw * m.bytesPerElement + seqs * 2 * linearStateBytes(m), seqs * (2 * lw + linearStateFlops(m))) + o.launchMsPerLayer)
    : 0;
  return fullAttentionLayers(m) * layer + linear + lmHead;
}

/** The FFN half of one decode step (every layer) for `tokens` rows, ms. */
export function ffnStepMs(card: CardSpec, m: ModelShape, tokens: number, gpus = 1, o: RooflineOptions = ROOFLINE_DEFAULTS): number {
  const dense = rooflineMs(card, m, o, (denseParams(m) * m.bytesPerElement) / gpus, (2 * tokens * denseParams(m)) / gpus) + o.launchMsPerLayer;
  const moeLayers = m.numLayers - m.denseLayers;
  if (moeLayers === 0) return m.numLayers * dense;
  // The busiest GPU's routed rows, as `routed` tokens' worth, and the experts they touch on it (epImbalance.ts).
  const routed = tokens * (o.epBalanced ? 1 : imbalanceFactor(tokens, m.topK, m.experts, gpus));
  const touched = expectedExperts(m.experts, m.topK, routed);
  const bytes = ((touched * expertParams(m) + sharedParams(m) + m.hiddenSize * m.experts) * m.bytesPerElement) / gpus;
  const flops = (2 * (routed * m.topK * expertParams(m) + tokens * (sharedParams(m) + m.hiddenSize * m.experts))) / gpus;
  return m.denseLayers * dense + moeLayers * (rooflineMs(card, m, o, bytes, flops) + o.launchMsPerLayer);
}

/**
 * Tokens at which one MoE (or dense) FFN layer turns from bandwidth- to compute-bound: the
 * knee past which more tokens per FFN rank cost time in proportion (arXiv 2601.21351's
 * r_peak regime). Bisection on the two roofline terms.
 */
export function ffnKneeTokens(card: CardSpec, m: ModelShape, gpus = 1, o: RooflineOptions = ROOFLINE_DEFAULTS): number {
  const moe = m.experts > 0;
  const terms = (t: number) => {
    const w = moe ? expectedExperts(m.experts, m.topK, t) * expertParams(m) + sharedParams(m) : denseParams(m);
    const active = moe ? m.topK * expertParams(m) + sharedParams(m) : denseParams(m);
    const bytesMs = (w * m.bytesPerElement) / gpus / (card.memoryBytesPerS * o.bandwidthEfficiency);
    const flopsMs = (2 * t * active) / gpus / (peakFlops(card, m.bytesPerElement) * o.computeEfficiency);
    return flopsMs - bytesMs;
  };
  let lo = 1;
  let hi = 2;
  while (terms(hi) < 0 && hi < 1e9) hi *= 2;
  for (let i = 0; i < 60; i++) {
    const mid = (lo + hi) / 2;
    if (terms(mid) < 0) lo = mid;
    else hi = mid;
  }
  return hi;
}

export interface RooflineProfileOptions {
  /** GPUs acting as one rank (DP attention, EP FFN); default 1. */
  gpus?: number;
  /** Batch grid of the attention curve: powers of two up to this (default 1024). */
  maxBatch?: number;
  /** Context grid of the attention curve (default 128 to 32768 by powers of two, plus these). */
  contexts?: number[];
  /** Token grid of the FFN curve: powers of two and 1.5x them up to this (default 65536). */
  maxTokens?: number;
  /** measuredAt of the profile (default now). */
  at?: string;
  factors?: RooflineOptions;
}

/**
 * The memory fields of a profile's model from the shapes. A rank of `gpus` GPUs counts as one
 * device of `gpus` cards (deviceMemoryBytes): every GPU a copy of the attention weights, the
 * FFN weights spread over them, the KV of the rank's batch (balanced, as the times assume).
 */
export function rooflineMemory(m: ModelShape, gpus = 1): { weightBytes: number; attentionWeightBytes: number; ffnWeightBytes: number; kvBytesPerToken: number } {
  const attentionWeightBytes = gpus * attentionRoleParams(m) * m.bytesPerElement;
  const ffnWeightBytes = ffnRoleParams(m) * m.bytesPerElement;
  // Only full-attention layers cache KV per token. TODO(hybrid): the Gated DeltaNet state is
  // per sequence (linearStateBytes x linear layers, ~0.5 MiB a layer for Qwen3-Next), which
  // MemoryModel (per-token KV only) cannot express yet; it is not counted against memory.
  return { weightBytes: attentionWeightBytes + ffnWeightBytes, attentionWeightBytes, ffnWeightBytes, kvBytesPerToken: fullAttentionLayers(m) * kvBytesPerToken(m) };
}

/** Bytes of `gpus` cards: the published memory (GB, 10^9 bytes). */
const cardBytes = (card: CardSpec, gpus: number): number => gpus * card.memoryGB * 1e9;

/** The memory model (memory.ts) of a rank of `gpus` cards, as a roofline profile of it gives: what published.ts bounds its shapes by. */
export const rooflineMemoryModel = (card: CardSpec, m: ModelShape, gpus = 1): MemoryModel => ({ deviceBytes: cardBytes(card, gpus), ...rooflineMemory(m, gpus), notes: [] });

/** A cost profile of `model` on `card` by the roofline: the same schema as a measured one, source 'roofline'. */
export function rooflineProfile(card: CardSpec, m: ModelShape, opts: RooflineProfileOptions = {}): CostProfile {
  const gpus = opts.gpus ?? 1;
  const o = opts.factors ?? ROOFLINE_DEFAULTS;
  const batches: number[] = [];
  for (let b = 1; b <= (opts.maxBatch ?? 1024); b *= 2) batches.push(b);
  const contexts = [...new Set([128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768, ...(opts.contexts ?? [])])].sort((a, b) => a - b);
  const tokens: number[] = [];
  for (let t = 1; t <= (opts.maxTokens ?? 65536); t *= 2) tokens.push(t, ...(t >= 2 ? [t * 1.5] : []));
  const f = o === ROOFLINE_DEFAULTS ? '' : `, bandwidth x${o.bandwidthEfficiency}, compute x${o.computeEfficiency}, ${o.launchMsPerLayer} ms/layer${o.epBalanced ? ', EP balanced' : ''}`;
  return {
    version: PROFILE_VERSION,
    measuredAt: opts.at ?? new Date().toISOString(),
    backend: 'cuda',
    device: `${card.label}${gpus > 1 ? ` x${gpus} as one rank` : ''} (roofline${f})`,
    driver: 'roofline',
    threads: 0,
    commit: 'roofline',
    source: 'roofline',
    model: { name: m.name, numLayers: m.numLayers, hiddenSize: m.hiddenSize, wireBytesPerElement: 2, ...rooflineMemory(m, gpus), ...(m.experts > 0 ? { moe: { numExperts: m.experts, topK: m.topK } } : {}) },
    deviceMemoryBytes: cardBytes(card, gpus),
    attention: batches.flatMap((batch) => contexts.map((context) => ({ batch, context, ms: attentionStepMs(card, m, batch, context, gpus, o) }))),
    ffn: tokens.sort((a, b) => a - b).map((t) => ({ tokens: t, ms: ffnStepMs(card, m, t, gpus, o) })),
    connectors: [],
  };
}

/**
 * Per-layer costs straight from the roofline (no profile grid, no interpolation) over `link`:
 * what published.ts feeds the step simulator. A rank of `gpus` GPUs as in rooflineProfile.
 */
export function rooflineLayerCosts(card: CardSpec, m: ModelShape, link: LinkPreset, gpus = 1, o: RooflineOptions = ROOFLINE_DEFAULTS): LayerCosts {
  return {
    numLayers: m.numLayers,
    bytesPerToken: m.hiddenSize * 2,
    attentionMs: (batch, context) => attentionStepMs(card, m, batch, context, gpus, o) / m.numLayers,
    ffnMs: (tokens) => ffnStepMs(card, m, tokens, gpus, o) / m.numLayers,
    linkLatencyMs: link.latencyUs / 1000,
    linkTransferMs: (bytes) => transferMs(link, bytes),
    linkSource: link.source,
  };
}
