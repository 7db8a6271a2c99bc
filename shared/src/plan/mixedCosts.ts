/**
 * Per-layer costs of an AFD topology whose two roles run on different hardware: the
 * attention half from one profile's costs, the FFN half from another's, the link from the
 * attention side (both sides are given the same link preset). `linkGpus`: the GPUs of one
 * rank that each send their own rows over their own link (a rank of g GPUs moves its bytes
 * g times as fast); 1 for a rank of one GPU.
 */
import type { LayerCosts } from './costs.js';

export function mixedCosts(attention: LayerCosts, ffn: LayerCosts, linkGpus = 1): LayerCosts {
  if (attention.numLayers !== ffn.numLayers) throw new Error(`the attention profile has ${attention.numLayers} layers and the FFN profile ${ffn.numLayers}: profiles of one model are needed`);
  if (!(linkGpus >= 1)) throw new Error(`linkGpus must be >= 1, got ${linkGpus}`);
  return {
    numLayers: attention.numLayers,
    bytesPerToken: attention.bytesPerToken,
    attentionMs: attention.attentionMs,
    ffnMs: ffn.ffnMs,
    linkLatencyMs: attention.linkLatencyMs,
    linkTransferMs: linkGpus === 1 ? attention.linkTransferMs : (bytes) => attention.linkTransferMs(bytes) / linkGpus,
    linkSource: linkGpus === 1 ? attention.linkSource : `${attention.linkSource}; x${linkGpus} links per rank`,
  };
}
