/**
 * Where the MoE router (gate) runs: on the FFN rank (it receives hidden states only), or on
 * the attention rank (the engine's computeGateOnAttention: the router's logits cross with
 * the hidden states, E floats more per token, and the router's compute moves to the
 * attention side). The router's time is the profile's gate curve; without one it is taken
 * as 0 ms, so only the extra bytes differ (the row note says so).
 */
import type { LayerCosts } from './costs.js';

export type GateSide = 'attention' | 'ffn';

/** Router logits cross as fp32 whatever the wire type of the hidden states. */
const LOGIT_BYTES = 4;

/** Bytes of one token A->F: its hidden state, plus E fp32 logits when the gate is on attention. */
export function a2fBytesPerToken(costs: LayerCosts, gate: GateSide): number {
  return costs.bytesPerToken + (gate === 'attention' && costs.moe ? costs.moe.numExperts * LOGIT_BYTES : 0);
}

/** The router's ms for `rows` tokens of one layer (0 without a gate curve). */
export const gateLayerMs = (costs: LayerCosts, rows: number): number => costs.gateMs?.(rows) ?? 0;

/** The row note for a gate side. */
export function gateNote(costs: LayerCosts, gate: GateSide): string {
  const where = gate === 'attention' ? `gate on attention (+${(costs.moe?.numExperts ?? 0) * LOGIT_BYTES} B of logits per token)` : 'gate on FFN';
  return costs.gateMs ? where : `${where}; router time unmeasured (0 ms)`;
}
