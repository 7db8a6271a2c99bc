/**
 * The physical floor of a decode step (PERFORMANCE.md): the bytes it must move, i.e.
 * every weight it reads (routed experts counted as the distinct experts expected under
 * uniform top-k routing, E (1 - (1 - k/E)^batch) per MoE layer; the embedding only its
 * batch rows unless tied to the LM head) plus the KV cache it reads, over a bandwidth.
 */
import type { LayerKinds, ModelLoadSpec } from '@afd/native/checkpoint';

/** HBM bandwidth of one H200 the floors use (PERFORMANCE.md), bytes/s. */
export const H200_BANDWIDTH = 4.3e12;

/** Expected distinct experts per MoE layer at `batch` tokens of uniform top-k routing. */
export function expectedActiveExperts(numExperts: number, topK: number, batch: number): number {
  return numExperts > 0 ? numExperts * (1 - (1 - topK / numExperts) ** batch) : 0;
}

/** Weight bytes one decode step of `batch` tokens reads. */
export function weightBytesPerStep(spec: ModelLoadSpec, batch: number): number {
  const c = spec.config;
  const active = expectedActiveExperts(c.numExperts, c.numExpertsPerTok, batch);
  let bytes = 0;
  for (const t of spec.tensors) {
    if (t.expert !== undefined) bytes += (t.byteLength * active) / c.numExperts;
    else if (t.slot === 'embed' && !c.tieWordEmbeddings) bytes += (t.byteLength / c.vocabSize) * Math.min(batch, c.vocabSize);
    else bytes += t.byteLength;
  }
  return bytes;
}

/**
 * KV bytes one decode step reads: every cached position of every sequence, K and V (an
 * MLA model's cache holds one latent row of kv_lora_rank + qk_rope_head_dim per position;
 * gdn layers hold none).
 */
export function kvBytesPerStep(spec: ModelLoadSpec, batch: number, context: number, kvElementBytes: number): number {
  const c = spec.config;
  const perPosition = (kinds: LayerKinds): number => {
    if (kinds.attention === 'gdn') return 0; // no KV cache: a fixed-size state (stateBytesPerStep)
    return kinds.attention === 'mla' && c.mla ? c.mla.kvLoraRank + c.mla.qkRopeHeadDim : 2 * c.numKvHeads * c.headDim;
  };
  return batch * context * c.layers.reduce((sum, kinds) => sum + perPosition(kinds), 0) * kvElementBytes;
}

/**
 * Recurrent-state bytes one decode step moves in the gdn layers: each sequence's f32 conv
 * state [C, W - 1] and delta-rule state [Hv, Dk, Dv] read and written back (0 without gdn layers).
 */
export function stateBytesPerStep(spec: ModelLoadSpec, batch: number): number {
  const g = spec.config.gdn;
  if (!g) return 0;
  const gdnLayers = spec.config.layers.filter((k) => k.attention === 'gdn').length;
  const convChannels = 2 * g.numKeyHeads * g.keyHeadDim + g.numValueHeads * g.valueHeadDim;
  const perLayer = convChannels * (g.convKernel - 1) + g.numValueHeads * g.keyHeadDim * g.valueHeadDim;
  return 2 * batch * gdnLayers * perLayer * 4;
}
