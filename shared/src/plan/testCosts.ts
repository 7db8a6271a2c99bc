/** Linear per-layer costs for the planner's closed-form tests: attention a ms per sequence, FFN f ms per token, link lat + bytes x perByte. */
import type { LayerCosts } from './costs.js';

export function linearCosts(L: number, a: number, f: number, lat = 0, perByte = 0, extra: Partial<LayerCosts> = {}): LayerCosts {
  return { numLayers: L, bytesPerToken: 100, attentionMs: (b) => a * b, ffnMs: (t) => f * t, linkLatencyMs: lat, linkTransferMs: (bytes) => bytes * perByte, linkSource: 'test', ...extra };
}
