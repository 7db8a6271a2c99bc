/**
 * The per-layer costs the step simulator schedules, read off a cost profile: attention
 * half and FFN half (the profile's per-step curves spread evenly over the layers), and the
 * crossing of one layer's hidden states one way, from a link preset or from the connector
 * curve measured in the profile (its round trip, halved).
 */
import { interpolate, interpolate2d } from './interpolate.js';
import { transferMs, type LinkPreset } from './links.js';
import type { CostProfile } from './profile.js';

export interface LayerCosts {
  numLayers: number;
  /** Bytes of one token's hidden state on the wire. */
  bytesPerToken: number;
  /** Attention half of one layer for `batch` sequences at `context` tokens, ms. */
  attentionMs(batch: number, context: number): number;
  /** FFN half of one layer for `tokens` rows, ms. */
  ffnMs(tokens: number): number;
  /** One way across the link: the hop's latency (in flight, the link free for the next send), ms. */
  linkLatencyMs: number;
  /** One way across the link: the time `bytes` occupy it (serialisation at its bandwidth), ms. */
  linkTransferMs(bytes: number): number;
  /** What the link figures come from, for the plan table. */
  linkSource: string;
  /** Routed experts and experts per token, when the model is MoE (the profile's model.moe). */
  moe?: { numExperts: number; topK: number };
  /** Per-rank FFN of one layer in an EP group of `epSize` for `tokens` rows of the whole group, ms, where the profile measured that size. */
  ffnEpMs?(tokens: number, epSize: number): number | undefined;
  /** EP ranks taken as perfectly balanced where the EP FFN is derived (epImbalance.ts); default false: the busiest rank bounds the layer. */
  epBalanced?: boolean;
  /** The router (gate) of one layer for `tokens` rows, ms, where the profile measured it (the ffn curve includes it). */
  gateMs?(tokens: number): number;
  /** A role's measured slowdown at `share` of the SMs under MPS, where the profile has points for it. */
  smSlowdown?(role: 'attention' | 'ffn', share: number): number | undefined;
}

/** f with its results kept per argument list (the planner's search asks the same points millions of times). */
function memo<A extends number[]>(f: (...args: A) => number): (...args: A) => number {
  const seen = new Map<string, number>();
  return (...args: A) => {
    const key = args.join(',');
    let v = seen.get(key);
    if (v === undefined) seen.set(key, (v = f(...args)));
    return v;
  };
}

/** The costs of a profile over `link`: a preset, or 'profile' for its measured connector (connector: which one). */
export function layerCosts(profile: CostProfile, link: LinkPreset | 'profile', connector = 'tcp'): LayerCosts {
  const L = profile.model.numLayers;
  const attention = profile.attention.map((p) => ({ x: p.batch, y: p.context, z: p.ms / L }));
  const ffn = profile.ffn.map((p) => ({ x: p.tokens, y: p.ms / L }));
  let linkLatencyMs: number;
  let linkTransferMs: (bytes: number) => number;
  let linkSource: string;
  if (link === 'profile') {
    const curve = profile.connectors.find((c) => c.connector === connector);
    if (!curve) throw new Error(`the profile has no ${connector} connector curve (it has: ${profile.connectors.map((c) => c.connector).join(', ') || 'none'}); pass --link with a preset`);
    // The measured round trip, halved; its smallest value is taken as the latency, the rest as transfer.
    const pts = curve.points.map((p) => ({ x: p.bytes, y: p.ms / 2 }));
    linkLatencyMs = Math.min(...pts.map((p) => p.y));
    linkTransferMs = (bytes) => Math.max(0, interpolate(pts, bytes) - linkLatencyMs);
    linkSource = `measured: ${connector} connector in the profile (${profile.device})`;
  } else {
    linkLatencyMs = link.latencyUs / 1000;
    linkTransferMs = (bytes) => transferMs(link, bytes);
    linkSource = link.source;
  }
  const epCurves = new Map((profile.ffnEp ?? []).map((c) => [c.epSize, c.points.map((p) => ({ x: p.tokens, y: p.ms / L }))]));
  const gate = profile.gate?.map((p) => ({ x: p.tokens, y: p.ms / L }));
  const shares = (role: 'attention' | 'ffn') => (profile.smShares ?? []).filter((p) => p.role === role).map((p) => ({ x: p.share, y: p.slowdown }));
  return {
    numLayers: L,
    bytesPerToken: profile.model.hiddenSize * profile.model.wireBytesPerElement,
    attentionMs: memo((batch: number, context: number) => interpolate2d(attention, batch, context)),
    ffnMs: memo((tokens: number) => interpolate(ffn, tokens)),
    linkLatencyMs,
    linkTransferMs,
    linkSource,
    ...(profile.model.moe ? { moe: profile.model.moe } : {}),
    ffnEpMs: (tokens, epSize) => {
      const pts = epCurves.get(epSize);
      return pts ? interpolate(pts, tokens) : undefined;
    },
    ...(gate ? { gateMs: memo((tokens: number) => interpolate(gate, tokens)) } : {}),
    smSlowdown: (role, share) => {
      const pts = shares(role);
      return pts.length ? Math.max(1, interpolate(pts, share)) : undefined;
    },
  };
}
