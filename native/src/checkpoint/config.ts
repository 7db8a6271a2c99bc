/**
 * config.json -> ModelConfigSpec through the family table (families.ts). Validates with
 * zod (unknown keys allowed: HF configs carry many we do not use), applies the row's
 * transformers defaults, reads each layer's kinds with the row's readers, and rejects
 * features the engine does not implement (sliding windows, other activations) instead of
 * silently ignoring them.
 */
import { z } from 'zod';
import type { ModelConfigSpec, TensorDtype } from '../modelSpec.js';
import { CheckpointError } from './errors.js';
import { findFamilyRow, supportedArchitectures, type FamilyRow } from './families.js';
import { failConfig, parseWith, type FamilyInput } from './familyFields.js';
import { flattenTextConfig } from './qwen3NextConfig.js';
import { parseRope } from './rope.js';

export { supportedArchitectures } from './families.js';

const posInt = z.int().min(1);
const tokenIds = z.union([z.int().min(0), z.array(z.int().min(0))]).nullish();

const baseSchema = z.looseObject({
  architectures: z.array(z.string()).min(1, 'needs at least one entry'),
  vocab_size: posInt,
  hidden_size: posInt,
  num_hidden_layers: posInt,
  num_attention_heads: posInt,
  num_key_value_heads: posInt.nullish(),
  head_dim: posInt.nullish(),
  intermediate_size: posInt.nullish(),
  rms_norm_eps: z.number().positive().nullish(),
  max_position_embeddings: posInt.nullish(),
  tie_word_embeddings: z.boolean().nullish(),
  attention_bias: z.boolean().nullish(),
  hidden_act: z.string().nullish(),
  use_sliding_window: z.boolean().nullish(),
  sliding_window: z.int().nullish(),
  bos_token_id: z.int().min(0).nullish(),
  eos_token_id: tokenIds,
  initializer_range: z.number().positive().nullish(),
  torch_dtype: z.string().nullish(),
  dtype: z.string().nullish(),
});

/** HF torch_dtype names -> storage dtype (what dummy weights are generated in). */
const torchDtypes: Readonly<Record<string, TensorDtype>> = { bfloat16: 'bf16', float16: 'f16', float32: 'f32' };

function idList(v: number | number[] | null | undefined): number[] {
  if (v === null || v === undefined) return [];
  return Array.isArray(v) ? v : [v];
}

const architecturesSchema = z.looseObject({ architectures: z.array(z.string()).min(1, 'needs at least one entry') });

/** "architecture X is not supported" before any other field is looked at (naming a nested text_config's too). */
function checkArchitecture(file: string, json: unknown): FamilyRow {
  const top = parseWith(file, architecturesSchema, json);
  const name = top.architectures[0]!;
  const row = findFamilyRow(name);
  if (row) return row;
  const text = (json as Record<string, unknown>)['text_config'];
  const nested = text && typeof text === 'object' ? (text as Record<string, unknown>) : null;
  const inner = nested ? [nested['architectures'], nested['model_type']].flat().filter((v) => typeof v === 'string') : [];
  const what = inner.length > 0 ? `${name} (its text_config is ${inner.join(' / ')})` : name;
  throw new CheckpointError(file, `architecture ${what} is not supported (supported: ${supportedArchitectures.join(', ')})`, {
    fix: 'use a checkpoint of a supported architecture',
  });
}

/** Refusals every family shares: quantized weights, other activations, sliding windows. */
function refuseUnsupported(file: string, json: Record<string, unknown>, base: z.infer<typeof baseSchema>): void {
  const quant = json['quantization_config'];
  if (quant !== undefined && quant !== null) {
    const method = typeof quant === 'object' ? (quant as Record<string, unknown>)['quant_method'] : undefined;
    failConfig(file, `quantization_config (${String(method ?? 'unknown method')}) is not supported: the engine loads bf16, f16 or f32 weights`, 'use a bf16 checkpoint (e.g. the dequantized one)');
  }
  const act = base.hidden_act ?? 'silu';
  if (act !== 'silu') failConfig(file, `hidden_act ${act} is not supported (only silu)`);
  if (base.use_sliding_window === true) failConfig(file, 'use_sliding_window is true: sliding-window attention is not supported', 'set use_sliding_window to false');
}

/**
 * Parse a config.json object. `generationConfig` (generation_config.json, optional) adds
 * its eos_token_id list to the config's.
 */
export function parseModelConfig(file: string, json: unknown, generationConfig?: unknown): ModelConfigSpec {
  const row = checkArchitecture(file, json);
  // A vision-language checkpoint (row.textConfig): its text_config is the model; the vision tower is not loaded.
  const { flat: raw, visionTowerIgnored } = row.textConfig ? flattenTextConfig(file, json as Record<string, unknown>) : { flat: json as Record<string, unknown>, visionTowerIgnored: false };
  const base = parseWith(file, baseSchema, raw);
  refuseUnsupported(file, raw, base);
  const maxPositionEmbeddings = base.max_position_embeddings ?? row.defaults.maxPositions;
  const rope = parseRope(file, raw, row.defaults.ropeTheta, maxPositionEmbeddings);
  const numLayers = base.num_hidden_layers;
  const input: FamilyInput = { file, json: raw, base, numLayers, rope, defaultHeadDim: row.defaults.headDim };
  const refusal = row.refuse?.(input);
  if (refusal) failConfig(file, refusal.problem, refusal.fix);
  const { kinds: attentionKinds, ...attentionFields } = row.attention(input);
  const { kinds, ...ffnFields } = row.ffn(input);
  if (attentionKinds.length !== numLayers || kinds.length !== numLayers) throw new Error(`family row ${row.family}: kinds for ${attentionKinds.length} / ${kinds.length} of ${numLayers} layers`);
  if (ffnFields.numExperts > 0 && ffnFields.numExpertsPerTok > ffnFields.numExperts) {
    failConfig(file, `num_experts_per_tok ${ffnFields.numExpertsPerTok} exceeds the ${ffnFields.numExperts} experts`);
  }
  const intermediateSize = base.intermediate_size ?? row.defaults.intermediateSize ?? 0;
  const denseLayers = kinds.flatMap((k, l) => (k === 'dense' ? [l] : []));
  if (intermediateSize === 0 && denseLayers.length > 0) {
    failConfig(file, `intermediate_size is missing: ${denseLayers.length} layer(s) (first ${denseLayers[0]}) have a dense MLP that needs it`, 'add intermediate_size to config.json');
  }

  const gen = generationConfig && typeof generationConfig === 'object' ? (generationConfig as Record<string, unknown>) : {};
  const genEos = tokenIds.safeParse(gen['eos_token_id']);
  const eosTokenIds = [...new Set([...idList(base.eos_token_id), ...(genEos.success ? idList(genEos.data) : [])])];
  for (const id of eosTokenIds) if (id >= base.vocab_size) failConfig(file, `eos_token_id ${id} is outside the vocabulary (vocab_size ${base.vocab_size})`);

  const dtypeName = base.dtype ?? base.torch_dtype ?? 'bfloat16';
  const weightDtype = torchDtypes[dtypeName] ?? failConfig(file, `torch_dtype ${dtypeName} is not supported (supported: ${Object.keys(torchDtypes).join(', ')})`);
  return {
    arch: row.family,
    hfArchitecture: base.architectures[0]!,
    vocabSize: base.vocab_size,
    hiddenSize: base.hidden_size,
    numLayers,
    numHeads: base.num_attention_heads,
    intermediateSize,
    rmsNormEps: base.rms_norm_eps ?? row.defaults.rmsNormEps,
    ropeTheta: rope.ropeTheta,
    ropeScaling: rope.ropeScaling,
    maxPositionEmbeddings,
    tieWordEmbeddings: base.tie_word_embeddings ?? false,
    ...attentionFields,
    ...ffnFields,
    layers: kinds.map((ffn, l) => ({ attention: attentionKinds[l]!, ffn })),
    normUnitOffset: row.normUnitOffset ?? false,
    visionTowerIgnored,
    eosTokenIds,
    bosTokenId: base.bos_token_id ?? null,
    initializerRange: base.initializer_range ?? 0.02,
    weightDtype,
  };
}
