/**
 * Published AFD results re-created from their stated hardware and models: roofline costs
 * (roofline.ts, one global set of efficiency factors) of a card from cards.ts and a model
 * shape from modelShape.ts, over a link preset, through the step simulator. Every setting
 * the papers state is used as stated; what they do not state (that we could not read here)
 * is an assumption named in `assumed`, the same choices across cases.
 *
 * Shapes compared, per GPU (output tokens/s over every GPU the shape uses):
 * - colocated: an instance of `colocatedGpus` GPUs (DP attention on each, EP over all), its
 *   batch `colocatedGpus` x b; attention then FFN every layer, and in MoE layers the token
 *   dispatch and combine over `colocatedLink` (each GPU's tokens, to the GPUs holding their
 *   experts), not overlapped;
 * - AFD xA1F: x attention ranks of `attentionGpus` GPUs, one FFN rank of g GPUs (EP over g,
 *   g from `ffnGpus`), over `afdLink`, with 1 to 4 micro-batches. A token crosses to the
 *   distinct FFN GPUs its top-k experts live on (g (1 - (1 - 1/g)^k)), and the exchange runs
 *   at the NICs of the narrower side: min(x x attentionGpus, g) links.
 *
 * Both bounded by memory as the search bounds a roofline profile (memory.ts, roofline.ts's
 * rooflineMemoryModel: the cards' published memory, weights by role, KV per token): a
 * colocated instance holds every weight and its batch's KV over its g GPUs, an attention
 * rank its attention weights (a copy per GPU) and KV, an FFN rank the FFN weights over g.
 */
import { findCard } from './cards.js';
import type { LayerCosts } from './costs.js';
import { LINK_PRESETS, findLinkPreset, type LinkPreset } from './links.js';
import { attentionNeed, colocatedNeed, doesNotFit, ffnNeed } from './memory.js';
import { mixedCosts } from './mixedCosts.js';
import { modelPreset, type ModelShape } from './modelShape.js';
import { ffnKneeTokens, rooflineLayerCosts, rooflineMemoryModel } from './roofline.js';
import { simulateAfd } from './stepSimulator.js';

export interface Deployment {
  card: string;
  /** Card of the FFN ranks when it differs (heterogeneous AFD). */
  ffnCard?: string;
  model: ModelShape;
  context: number;
  tpotMs: number;
  colocatedGpus: number;
  colocatedLink: LinkPreset;
  attentionGpus: number;
  ffnGpus: number[];
  afdLink: LinkPreset;
  /** Most GPUs one AFD replica may take. */
  maxGpus: number;
}

export interface ShapeResult {
  perGpu: number;
  tpotMs: number;
  batch: number;
  gpus: number;
  /** "colocated EP72" or "48A1F (F: EP24), DBO". */
  shape: string;
}

export interface Comparison {
  colocated: ShapeResult | null;
  afd: ShapeResult | null;
  /** AFD over colocated, per GPU (null when either meets nothing). */
  ratio: number | null;
}

const BATCHES = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512];

/** Expected distinct GPUs of an EP group of `gpus` that one token's top-k experts live on. */
export function dispatchFanout(m: ModelShape, gpus: number): number {
  if (m.experts === 0 || m.topK === 0) return 1;
  return gpus * (1 - (1 - 1 / gpus) ** m.topK);
}

/** The NVLink of a card as a link preset: half its published both-ways bandwidth each way. */
function nvlinkOf(card: string): LinkPreset {
  const c = findCard(card);
  return { name: `nvlink-${c.name}`, bandwidthBytesPerS: c.nvlinkBytesPerS / 2, latencyUs: 3, source: `published: ${c.label} NVLink ${c.nvlinkBytesPerS / 1e9} GB/s (half each way); latency typical` };
}

/**
 * The best colocated instance at the target: plain (attention, FFN, then the MoE dispatch
 * and combine, in turn) or with two-batch overlap (two micro-batches of b / 2: one's
 * dispatch runs while the other computes; MoE weights read once per micro-batch), whichever
 * gives more: a real EP deployment picks its better mode. Batches up to what fits.
 */
export function bestColocated(d: Deployment): ShapeResult | null {
  const g = d.colocatedGpus;
  const costs = rooflineLayerCosts(findCard(d.card), d.model, d.colocatedLink, g);
  const memory = rooflineMemoryModel(findCard(d.card), d.model, g);
  const moeShare = d.model.experts > 0 ? (d.model.numLayers - d.model.denseLayers) / d.model.numLayers : 0;
  const L = costs.numLayers;
  // Dispatch plus combine of `perGpu` tokens of each GPU, over its link (none inside one GPU).
  const exchange = (perGpu: number) => (g > 1 && moeShare > 0 ? 2 * (costs.linkLatencyMs + costs.linkTransferMs(perGpu * dispatchFanout(d.model, g) * costs.bytesPerToken)) : 0);
  let best: ShapeResult | null = null;
  for (const b of BATCHES) {
    const batch = b * g;
    if (doesNotFit(memory, [{ role: 'colocated', need: colocatedNeed(memory, batch, d.context) }])) break;
    const plain = L * (costs.attentionMs(batch, d.context) + costs.ffnMs(batch) + moeShare * exchange(b));
    const half = costs.attentionMs(batch / 2, d.context) + costs.ffnMs(batch / 2);
    const overlapped = b >= 2 ? L * Math.max(2 * half, 2 * moeShare * exchange(b / 2)) + exchange(b / 2) : Infinity;
    const stepMs = Math.min(plain, overlapped);
    const perGpu = (batch * 1000) / stepMs / g;
    if (stepMs <= d.tpotMs && (!best || perGpu > best.perGpu)) best = { perGpu, tpotMs: stepMs, batch, gpus: g, shape: `colocated EP${g}${overlapped < plain ? ', two-batch overlap' : ''}` };
  }
  return best;
}

/** The best xA1F at the target: FFN ranks whose weights fit their g GPUs, attention batches up to what fits. */
export function bestAfd(d: Deployment, stageCounts = [1, 2, 3, 4]): ShapeResult | null {
  const attn = rooflineLayerCosts(findCard(d.card), d.model, d.afdLink, d.attentionGpus);
  const attnMemory = rooflineMemoryModel(findCard(d.card), d.model, d.attentionGpus);
  let best: ShapeResult | null = null;
  for (const g of d.ffnGpus) {
    const ffnMemory = rooflineMemoryModel(findCard(d.ffnCard ?? d.card), d.model, g);
    if (doesNotFit(ffnMemory, [{ role: 'FFN rank', need: ffnNeed(ffnMemory, 1) }])) continue;
    const ffn = rooflineLayerCosts(findCard(d.ffnCard ?? d.card), d.model, d.afdLink, g);
    for (let x = 1; x * d.attentionGpus + g <= d.maxGpus; x++) {
      const costs: LayerCosts = { ...mixedCosts(attn, ffn, Math.min(x * d.attentionGpus, g)), bytesPerToken: d.model.hiddenSize * 2 * dispatchFanout(d.model, g) };
      const gpus = x * d.attentionGpus + g;
      for (const stages of stageCounts) {
        for (const b of BATCHES) {
          const batch = b * d.attentionGpus;
          if (doesNotFit(attnMemory, [{ role: 'attention rank', need: attentionNeed(attnMemory, batch, d.context) }])) break;
          if (batch < stages) continue;
          const p = simulateAfd(costs, { attention: x, ffn: 1, stages }, { batchPerRank: batch, context: d.context });
          const perGpu = p.tokensPerS / gpus;
          if (p.tpotMs <= d.tpotMs && (!best || perGpu > best.perGpu)) best = { perGpu, tpotMs: p.tpotMs, batch, gpus, shape: `${x}A1F (A: ${d.attentionGpus} GPU${d.attentionGpus > 1 ? 's' : ''} each, F: EP${g}), ${stages === 1 ? 'no overlap' : stages === 2 ? 'DBO' : `${stages} micro-batches`}` };
        }
      }
    }
  }
  return best;
}

export function compareAfdColocated(d: Deployment): Comparison {
  const colocated = bestColocated(d);
  const afd = bestAfd(d);
  return { colocated, afd, ratio: colocated && afd ? afd.perGpu / colocated.perGpu : null };
}

const fp8 = { bytesPerElement: 1, kvBytesPerElement: 2 };
const link = (name: string) => findLinkPreset(name);
/** Scale-out of an "ordinary" cluster per GPU: 100 GbE RoCE (the slowest preset). */
const ordinary = LINK_PRESETS.find((l) => l.name === 'roce100')!;

export interface PublishedCase {
  id: string;
  claim: string;
  source: string;
  deployment: Deployment;
  /** What the paper states that we used, and what we assumed. */
  stated: string;
  assumed: string;
}

/** The settings of the published results (docs/planner.md, "Published results re-created"). */
export function publishedCases(): PublishedCase[] {
  const dsv3 = modelPreset('deepseek-v3', fp8);
  return [
    {
      id: 'fastafd-gb200', claim: 'AFD 1.35-1.45x tok/s per GPU on GB200 NVL72', source: 'FastAFD (as cited in issue 42)',
      deployment: { card: 'gb200', model: dsv3, context: 4096, tpotMs: 50, colocatedGpus: 72, colocatedLink: nvlinkOf('gb200'), attentionGpus: 1, ffnGpus: [8, 16, 24, 32], afdLink: nvlinkOf('gb200'), maxGpus: 72 },
      stated: 'GB200 NVL72 (72 GPUs, one NVLink5 domain)', assumed: 'DeepSeek-V3 in FP8, context 4096, TPOT <= 50 ms; baseline wide EP72 with DP attention',
    },
    {
      id: 'megascale-infer', claim: 'up to 1.90x tok/s per GPU over colocated serving', source: 'MegaScale-Infer, arXiv 2504.02263',
      deployment: { card: 'a100', model: modelPreset('mixtral-8x22b'), context: 4096, tpotMs: 50, colocatedGpus: 8, colocatedLink: nvlinkOf('a100'), attentionGpus: 8, ffnGpus: [8], afdLink: link('ib200'), maxGpus: 128 },
      stated: 'Mixtral 8x22B (one of its three models), ping-pong micro-batches, M2N over RDMA', assumed: 'A100 80GB nodes of 8, bf16, context 4096, TPOT <= 50 ms (the uniform choice; see docs for 2K / 150 ms); baseline one 8-GPU node per replica; 200 Gb/s per GPU',
    },
    {
      id: 'step3', claim: '4,039 tok/s per GPU at TPOT <= 50 ms (DeepSeek-V3 in the same setup: 2,324)', source: 'Step-3, arXiv 2507.19427',
      deployment: { card: 'h800', model: modelPreset('step3-like', fp8), context: 4096, tpotMs: 50, colocatedGpus: 8, colocatedLink: nvlinkOf('h800'), attentionGpus: 1, ffnGpus: [8, 16, 32], afdLink: link('ib400'), maxGpus: 64 },
      stated: 'Hopper (H800-class), 4K context, FP8, no MTP, TPOT 50 ms', assumed: 'Step-3-like shapes, DP attention one GPU per rank, FFN EP 8-32, 400 Gb/s RDMA per GPU',
    },
    {
      id: 'dead-zone', claim: 'AFD loses to EP on ordinary clusters (scale-out bandwidth caps the FFN)', source: 'arXiv 2602.09721',
      deployment: { card: 'h800', model: dsv3, context: 4096, tpotMs: 50, colocatedGpus: 32, colocatedLink: ordinary, attentionGpus: 1, ffnGpus: [8, 16, 32], afdLink: ordinary, maxGpus: 64 },
      stated: 'ordinary cluster: 8-GPU nodes joined by scale-out Ethernet; large MoE; AFD vs EP', assumed: 'H800, DeepSeek-V3 FP8, 100 GbE per GPU for both EP32 and A<->F, AFD replicas up to 64 GPUs, context 4096, TPOT <= 50 ms',
    },
    {
      id: 'parity', claim: 'parity on GPUs (+1%)', source: 'the reference system (issue 42)',
      deployment: { card: 'h100', model: modelPreset('qwen3-30b-a3b'), context: 4096, tpotMs: 50, colocatedGpus: 1, colocatedLink: nvlinkOf('h100'), attentionGpus: 1, ffnGpus: [1], afdLink: nvlinkOf('h100'), maxGpus: 8 },
      stated: 'GPUs, AFD vs colocated', assumed: 'one 8-GPU H100 node with NVLink, Qwen3-30B-A3B bf16 (fits one GPU), context 4096, TPOT <= 50 ms',
    },
  ];
}

/**
 * The closed-form A:F ratio, our reading of arXiv 2601.21351's mean-field rule
 * r* = max{r_A, r_C, r_peak} for rA-1F, at a fixed batch per attention rank and DBO (stage
 * batch b): r_A balances the FFN against attention, sup { r : ffn(r b) <= attn(b) }; r_peak
 * is where the FFN turns compute-bound (knee tokens / b: below it an FFN rank's cost is flat
 * in tokens, so more attention ranks per FFN rank are free); r_C caps both where the link
 * would take longer than attention, sup { r : link(r b) <= attn(b) }.
 * r* = min(max(r_A, r_peak), r_C). Monotone functions, solved by bisection.
 */
export function closedFormRatio(costs: LayerCosts, kneeTokens: number, batchPerRank: number, context: number, stages = 2): number {
  const b = batchPerRank / stages;
  const attn = costs.attentionMs(b, context);
  const sup = (f: (r: number) => number): number => {
    if (f(1) > attn) return 1;
    let lo = 1;
    let hi = 2;
    while (f(hi) <= attn && hi < 1e6) hi *= 2;
    for (let i = 0; i < 60; i++) {
      const mid = (lo + hi) / 2;
      if (f(mid) <= attn) lo = mid;
      else hi = mid;
    }
    return lo;
  };
  const rA = sup((r) => costs.ffnMs(r * b));
  const rC = sup((r) => costs.linkLatencyMs + costs.linkTransferMs(r * b * costs.bytesPerToken));
  return Math.min(Math.max(rA, kneeTokens / b), rC);
}

/** The simulated best x of xA1F at a fixed batch and DBO: the x with the most tokens/s per GPU. */
export function simulatedBestRatio(costs: LayerCosts, batchPerRank: number, context: number, maxX = 64, stages = 2): number {
  let best = { x: 1, perGpu: 0 };
  for (let x = 1; x <= maxX; x++) {
    const p = simulateAfd(costs, { attention: x, ffn: 1, stages }, { batchPerRank, context });
    if (p.tokensPerSPerGpu > best.perGpu) best = { x, perGpu: p.tokensPerSPerGpu };
  }
  return best.x;
}

export interface RatioPoint {
  card: string;
  model: string;
  batchPerRank: number;
  context: number;
  closedForm: number;
  simulated: number;
  /** |closed form - simulated| / simulated. */
  error: number;
}

/** The closed-form ratio against the simulated best x over a grid of batches and contexts (two models, NVLink4). */
export function ratioGrid(maxX = 140): RatioPoint[] {
  const out: RatioPoint[] = [];
  for (const [card, model] of [['h100', 'qwen3-30b-a3b'], ['h200', 'deepseek-v2-lite']] as const) {
    const m = modelPreset(model);
    const costs = rooflineLayerCosts(findCard(card), m, findLinkPreset('nvlink4'));
    const knee = ffnKneeTokens(findCard(card), m);
    for (const batchPerRank of [64, 128, 256, 512]) {
      for (const context of [1024, 16384]) {
        const simulated = simulatedBestRatio(costs, batchPerRank, context, maxX);
        const closedForm = closedFormRatio(costs, knee, batchPerRank, context);
        out.push({ card, model, batchPerRank, context, closedForm, simulated, error: Math.abs(closedForm - simulated) / simulated });
      }
    }
  }
  return out;
}
