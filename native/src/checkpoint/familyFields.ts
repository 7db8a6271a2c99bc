/**
 * How a family row (families.ts) reads config.json: the attention fields of its layers and
 * the FFN kind of each layer with the MoE fields. The readers of the GQA families (Qwen3,
 * Qwen3-MoE, Llama, Mixtral) live here; DeepSeek's in deepseekConfig.ts.
 */
import { z } from 'zod';
import type { AttentionKind, FfnKind, ModelConfigSpec } from '../modelSpec.js';
import { CheckpointError } from './errors.js';
import type { RopeSettings } from './rope.js';

/** The config.json fields every family has, already validated (config.ts). */
export interface BaseFields {
  hidden_size: number;
  num_attention_heads: number;
  num_key_value_heads?: number | null | undefined;
  head_dim?: number | null | undefined;
  /** Optional: a family whose layers are all MoE (Qwen3.5-MoE) has none; dense layers need it (config.ts). */
  intermediate_size?: number | null | undefined;
  attention_bias?: boolean | null | undefined;
  sliding_window?: number | null | undefined;
}

/** What a row's readers get. */
export interface FamilyInput {
  /** config.json's path, for messages. */
  file: string;
  json: Record<string, unknown>;
  base: BaseFields;
  numLayers: number;
  rope: RopeSettings;
  /** The row's transformers default of head_dim; null: hidden_size / num_attention_heads. */
  defaultHeadDim: number | null;
}

/** A row's reading of the attention: the kind of every layer and the hyper-parameters. */
export type AttentionFields = Pick<ModelConfigSpec, 'numKvHeads' | 'headDim' | 'qkNorm' | 'attentionBias' | 'mla' | 'rotaryDim' | 'gdn'> & { kinds: AttentionKind[] };

/** A row's reading of the FFN: each layer's kind and the MoE hyper-parameters. */
export type FfnFields = Pick<ModelConfigSpec, 'numExperts' | 'numExpertsPerTok' | 'moeIntermediateSize' | 'normTopkProb' | 'routing' | 'gatedSharedExpert'> & { kinds: FfnKind[] };

/** Throws a CheckpointError about config.json. */
export function failConfig(file: string, problem: string, fix?: string): never {
  throw new CheckpointError(file, problem, fix ? { fix } : {});
}

/** Parses with zod; a failure names every bad field. */
export function parseWith<T>(file: string, schema: z.ZodType<T>, json: unknown): T {
  const r = schema.safeParse(json);
  if (r.success) return r.data;
  const issues = r.error.issues.map((i) => `${i.path.length ? i.path.join('.') : '(root)'}: ${i.message}`).join('; ');
  throw new CheckpointError(file, `invalid config: ${issues}`, { fix: 'fix config.json; it must be a HuggingFace config of a supported model' });
}

/**
 * gqa attention in every layer. qkNorm: the family's q/k head norms (Qwen3); biases: read
 * attention_bias, or never (Mixtral has no such field and no biases).
 */
export function gqaAttention(opts: { qkNorm: boolean; biases: 'attention_bias' | 'never' }): (input: FamilyInput) => AttentionFields {
  return (input) => {
    const { kind, ...fields } = gqaFields(input, opts);
    return { ...fields, kinds: new Array<AttentionKind>(input.numLayers).fill(kind) };
  };
}

/**
 * The fields of gqa attention (one kind for the layers that have it).
 * @param defaultKvHeads num_key_value_heads when the config has none (default: num_attention_heads).
 */
export function gqaFields(
  { file, base, defaultHeadDim }: FamilyInput,
  opts: { qkNorm: boolean; biases: 'attention_bias' | 'never'; defaultKvHeads?: number },
): Omit<AttentionFields, 'kinds'> & { kind: 'gqa' } {
  const numHeads = base.num_attention_heads;
  const numKvHeads = base.num_key_value_heads ?? opts.defaultKvHeads ?? numHeads;
  if (numHeads % numKvHeads !== 0) failConfig(file, `num_attention_heads ${numHeads} is not a multiple of num_key_value_heads ${numKvHeads}`);
  let headDim = base.head_dim ?? defaultHeadDim;
  if (headDim === null) {
    if (base.hidden_size % numHeads !== 0) failConfig(file, `hidden_size ${base.hidden_size} is not divisible by num_attention_heads ${numHeads} and head_dim is not set`, 'set head_dim');
    headDim = base.hidden_size / numHeads;
  }
  if (headDim % 2 !== 0) failConfig(file, `head_dim ${headDim} must be even for RoPE`);
  const attentionBias = opts.biases === 'attention_bias' ? (base.attention_bias ?? false) : false;
  return { kind: 'gqa', numKvHeads, headDim, qkNorm: opts.qkNorm, attentionBias, mla: null, rotaryDim: headDim, gdn: null };
}

/** A dense MLP in every layer. */
export function denseFfn({ numLayers }: FamilyInput): FfnFields {
  return { kinds: new Array<FfnKind>(numLayers).fill('dense'), numExperts: 0, numExpertsPerTok: 0, moeIntermediateSize: 0, normTopkProb: false, routing: null, gatedSharedExpert: null };
}

const posInt = z.int().min(1);

const qwen3MoeSchema = z.looseObject({
  // transformers 5 saves num_experts under its attribute-map name num_local_experts.
  num_experts: posInt.nullish(),
  num_local_experts: posInt.nullish(),
  num_experts_per_tok: posInt,
  moe_intermediate_size: posInt,
  norm_topk_prob: z.boolean().nullish(),
  decoder_sparse_step: posInt.nullish(),
  mlp_only_layers: z.array(z.int().min(0)).nullish(),
});

/** Qwen3-MoE: softmax top-k experts where a layer is not mlp-only and on the decoder_sparse_step grid, else dense. */
export function qwen3MoeFfn({ file, json, numLayers }: FamilyInput): FfnFields {
  const moe = parseWith(file, qwen3MoeSchema, json);
  const numExperts = moe.num_experts ?? moe.num_local_experts ?? failConfig(file, 'num_experts is missing', 'Qwen3-MoE configs need num_experts (or num_local_experts)');
  const step = moe.decoder_sparse_step ?? 1;
  const mlpOnly = new Set(moe.mlp_only_layers ?? []);
  for (const l of mlpOnly) if (l >= numLayers) failConfig(file, `mlp_only_layers entry ${l} is not a layer index (num_hidden_layers ${numLayers})`);
  // transformers: MoE where the layer is not mlp-only and (layer + 1) % decoder_sparse_step == 0.
  const kinds = Array.from({ length: numLayers }, (_, l): FfnKind => (!mlpOnly.has(l) && (l + 1) % step === 0 ? 'moe' : 'dense'));
  return { kinds, numExperts, numExpertsPerTok: moe.num_experts_per_tok, moeIntermediateSize: moe.moe_intermediate_size, normTopkProb: moe.norm_topk_prob ?? false, routing: null, gatedSharedExpert: null };
}

const mixtralSchema = z.looseObject({
  num_local_experts: posInt.nullish(),
  num_experts_per_tok: posInt.nullish(),
});

/** Mixtral: every layer MoE, experts intermediate_size wide, top-k always renormalised. */
export function mixtralFfn({ file, json, base, numLayers }: FamilyInput): FfnFields {
  const moe = parseWith(file, mixtralSchema, json);
  return {
    kinds: new Array<FfnKind>(numLayers).fill('moe'),
    numExperts: moe.num_local_experts ?? 8,
    numExpertsPerTok: moe.num_experts_per_tok ?? 2,
    moeIntermediateSize: base.intermediate_size ?? failConfig(file, 'intermediate_size is missing: Mixtral experts are intermediate_size wide', 'add intermediate_size to config.json'),
    normTopkProb: true,
    routing: null,
    gatedSharedExpert: null,
  };
}
