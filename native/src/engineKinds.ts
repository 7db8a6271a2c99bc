/**
 * What the native engine builds today, checked in TypeScript before a load spec crosses
 * into C++: the checkpoint layer may describe more layer kinds and features than the
 * engine implements (today it builds every kind the checkpoint layer knows), and C++ would
 * refuse them with a message about an unknown kind string. Keep these lists in step with
 * native/src/model/layer-kinds.h and slots.h.
 */
import type { AttentionKind, FfnKind, ModelConfigSpec, TensorSlot } from './modelSpec.js';

/** Attention kinds the engine builds (layer-kinds.h). */
export const engineAttentionKinds: readonly AttentionKind[] = ['gqa', 'mla', 'gqa_gated', 'gdn'];
/** FFN kinds the engine builds (layer-kinds.h). */
export const engineFfnKinds: readonly FfnKind[] = ['dense', 'moe', 'moe+shared', 'moe+gated_shared'];

/** Slots the family table names that the engine does not bind yet (slots.h lacks them): none today. */
export const slotsNotYetOnEngine: readonly TensorSlot[] = [];

/** Ranges listed before the rest is summarised. */
const maxRanges = 4;

/** "layers 0-2, 4" for [0, 1, 2, 4], "layer 3" for [3]; a long list as its first ranges and a count. */
function layerRanges(layers: readonly number[]): string {
  const parts: string[] = [];
  for (let i = 0; i < layers.length; ) {
    let j = i;
    while (j + 1 < layers.length && layers[j + 1] === layers[j]! + 1) j++;
    parts.push(i === j ? `${layers[i]}` : `${layers[i]}-${layers[j]}`);
    i = j + 1;
  }
  if (layers.length === 1) return `layer ${parts[0]}`;
  if (parts.length <= maxRanges) return `layers ${parts.join(', ')}`;
  return `${layers.length} layers: ${parts.slice(0, maxRanges).join(', ')}, ...`;
}

/** What of a model the engine cannot build yet, one phrase each; empty when it can build all of it. */
export function engineGaps(config: ModelConfigSpec): string[] {
  const gaps: string[] = [];
  // Attention kinds first, then FFN kinds, each with the layers that have it.
  const missing = (what: string, kindOf: (l: number) => string, known: readonly string[]): void => {
    const byKind = new Map<string, number[]>();
    config.layers.forEach((_, l) => {
      const kind = kindOf(l);
      if (!known.includes(kind)) byKind.set(kind, [...(byKind.get(kind) ?? []), l]);
    });
    for (const [kind, layers] of byKind) gaps.push(`${what} kind ${kind} (${layerRanges(layers)})`);
  };
  missing('attention', (l) => config.layers[l]!.attention, engineAttentionKinds);
  missing('FFN', (l) => config.layers[l]!.ffn, engineFfnKinds);
  return gaps;
}

/** One sentence saying why the engine cannot load this model, or null when it can. */
export function engineRefusal(config: ModelConfigSpec): string | null {
  const gaps = engineGaps(config);
  if (gaps.length === 0) return null;
  return (
    `${config.hfArchitecture} (family ${config.arch}): ${gaps.join('; ')} not yet implemented on the engine. ` +
    'The checkpoint is understood (config, tensor names and shapes, make-model, inspect, the planner), but no rank can load it yet; serve a supported family meanwhile'
  );
}

/** Throws engineRefusal's message when the engine cannot build the model. */
export function assertEngineBuilds(config: ModelConfigSpec): void {
  const refusal = engineRefusal(config);
  if (refusal) throw new Error(refusal);
}
