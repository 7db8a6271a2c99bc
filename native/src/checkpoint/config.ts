/**
 * config.json -> ModelConfigSpec for the supported architectures. Validates with zod
 * (unknown keys allowed: HF configs carry many we do not use), applies each
 * architecture's transformers defaults, and rejects features the engine does not
 * implement (sliding windows, other activations) instead of silently ignoring them.
 */
import { z } from 'zod';
import type { ArchFamily, ModelConfigSpec, TensorDtype } from '../modelSpec.js';
import { parseDeepseek } from './deepseekConfig.js';
import { CheckpointError } from './errors.js';
import { parseRope } from './rope.js';

/** HF architectures[0] string -> family, with transformers' defaults for that class. */
interface ArchInfo {
  family: ArchFamily;
  defaultRopeTheta: number;
  defaultRmsNormEps: number;
  defaultMaxPositions: number;
  /** Qwen3Config defaults head_dim to 128; the others derive it as hidden_size / heads. */
  defaultHeadDim: number | null;
}

const archs: Readonly<Record<string, ArchInfo>> = {
  Qwen3MoeForCausalLM: { family: 'qwen3_moe', defaultRopeTheta: 10000, defaultRmsNormEps: 1e-6, defaultMaxPositions: 32768, defaultHeadDim: null },
  Qwen3ForCausalLM: { family: 'qwen3', defaultRopeTheta: 10000, defaultRmsNormEps: 1e-6, defaultMaxPositions: 32768, defaultHeadDim: 128 },
  LlamaForCausalLM: { family: 'llama', defaultRopeTheta: 10000, defaultRmsNormEps: 1e-6, defaultMaxPositions: 2048, defaultHeadDim: null },
  MixtralForCausalLM: { family: 'mixtral', defaultRopeTheta: 1e6, defaultRmsNormEps: 1e-5, defaultMaxPositions: 4096 * 32, defaultHeadDim: null },
  DeepseekV2ForCausalLM: { family: 'deepseek_v2', defaultRopeTheta: 10000, defaultRmsNormEps: 1e-6, defaultMaxPositions: 2048, defaultHeadDim: null },
  DeepseekV3ForCausalLM: { family: 'deepseek_v3', defaultRopeTheta: 10000, defaultRmsNormEps: 1e-6, defaultMaxPositions: 4096, defaultHeadDim: null },
};

/** HF architecture strings this engine loads. */
export const supportedArchitectures: readonly string[] = Object.keys(archs);

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
  intermediate_size: posInt,
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

const mixtralSchema = z.looseObject({
  num_local_experts: posInt.nullish(),
  num_experts_per_tok: posInt.nullish(),
});

function formatIssues(error: z.ZodError): string {
  return error.issues.map((i) => `${i.path.length ? i.path.join('.') : '(root)'}: ${i.message}`).join('; ');
}

function parseWith<T>(file: string, schema: z.ZodType<T>, json: unknown): T {
  const r = schema.safeParse(json);
  if (!r.success) throw new CheckpointError(file, `invalid config: ${formatIssues(r.error)}`, { fix: 'fix config.json; it must be a HuggingFace config of a supported model' });
  return r.data;
}

function idList(v: number | number[] | null | undefined): number[] {
  if (v === null || v === undefined) return [];
  return Array.isArray(v) ? v : [v];
}

const architecturesSchema = z.looseObject({ architectures: z.array(z.string()).min(1, 'needs at least one entry') });

/** "architecture X is not supported" before any other field is looked at (naming a nested text_config's too). */
function checkArchitecture(file: string, json: unknown): ArchInfo {
  const top = parseWith(file, architecturesSchema, json);
  const name = top.architectures[0]!;
  const info = archs[name];
  if (info) return info;
  const text = (json as Record<string, unknown>)['text_config'];
  const nested = text && typeof text === 'object' ? (text as Record<string, unknown>) : null;
  const inner = nested ? [nested['architectures'], nested['model_type']].flat().filter((v) => typeof v === 'string') : [];
  const what = inner.length > 0 ? `${name} (its text_config is ${inner.join(' / ')})` : name;
  throw new CheckpointError(file, `architecture ${what} is not supported (supported: ${supportedArchitectures.join(', ')})`, {
    fix: 'use a checkpoint of a supported architecture',
  });
}

/** KV heads and head dim of a GQA config (defaults per architecture). */
function gqaHeads(base: z.infer<typeof baseSchema>, info: ArchInfo, fail: (problem: string, fix?: string) => never): { numKvHeads: number; headDim: number } {
  const numHeads = base.num_attention_heads;
  const numKvHeads = base.num_key_value_heads ?? numHeads;
  if (numHeads % numKvHeads !== 0) fail(`num_attention_heads ${numHeads} is not a multiple of num_key_value_heads ${numKvHeads}`);
  let headDim = base.head_dim ?? info.defaultHeadDim;
  if (headDim === null) {
    if (base.hidden_size % numHeads !== 0) fail(`hidden_size ${base.hidden_size} is not divisible by num_attention_heads ${numHeads} and head_dim is not set`, 'set head_dim');
    headDim = base.hidden_size / numHeads;
  }
  if (headDim % 2 !== 0) fail(`head_dim ${headDim} must be even for RoPE`);
  return { numKvHeads, headDim };
}

/**
 * Parse a config.json object. `generationConfig` (generation_config.json, optional) adds
 * its eos_token_id list to the config's.
 */
export function parseModelConfig(file: string, json: unknown, generationConfig?: unknown): ModelConfigSpec {
  const info = checkArchitecture(file, json);
  const base = parseWith(file, baseSchema, json);
  const hfArchitecture = base.architectures[0]!;
  const deepseek = info.family === 'deepseek_v2' || info.family === 'deepseek_v3';
  const fail = (problem: string, fix?: string): never => {
    throw new CheckpointError(file, problem, fix ? { fix } : {});
  };
  const quant = (json as Record<string, unknown>)['quantization_config'];
  if (quant !== undefined && quant !== null) {
    const method = typeof quant === 'object' ? (quant as Record<string, unknown>)['quant_method'] : undefined;
    fail(`quantization_config (${String(method ?? 'unknown method')}) is not supported: the engine loads bf16, f16 or f32 weights`, 'use a bf16 checkpoint (e.g. the dequantized one)');
  }
  const act = base.hidden_act ?? 'silu';
  if (act !== 'silu') fail(`hidden_act ${act} is not supported (only silu)`);
  if (base.use_sliding_window === true) fail('use_sliding_window is true: sliding-window attention is not supported', 'set use_sliding_window to false');
  if (info.family === 'mixtral' && base.sliding_window !== null && base.sliding_window !== undefined) {
    fail(`sliding_window ${base.sliding_window}: sliding-window attention is not supported`, 'set sliding_window to null');
  }
  const numHeads = base.num_attention_heads;
  // MLA (DeepSeek) has neither: one latent per token serves every head (parseDeepseek).
  const gqa = deepseek ? null : gqaHeads(base, info, fail);
  const maxPositionEmbeddings = base.max_position_embeddings ?? info.defaultMaxPositions;
  const rope = parseRope(file, json as Record<string, unknown>, info.defaultRopeTheta, maxPositionEmbeddings);
  const numLayers = base.num_hidden_layers;

  let numExperts = 0;
  let numExpertsPerTok = 0;
  let moeIntermediateSize = 0;
  let normTopkProb = false;
  let moeLayers = new Array<boolean>(numLayers).fill(false);
  const ds = deepseek ? parseDeepseek(file, json as Record<string, unknown>, numLayers, rope, info.family === 'deepseek_v3') : null;
  if (ds) {
    ({ numExperts, numExpertsPerTok, moeIntermediateSize, normTopkProb, moeLayers } = ds);
  } else if (info.family === 'qwen3_moe') {
    const moe = parseWith(file, qwen3MoeSchema, json);
    const experts = moe.num_experts ?? moe.num_local_experts;
    if (experts === null || experts === undefined) fail('num_experts is missing', 'Qwen3-MoE configs need num_experts (or num_local_experts)');
    numExperts = experts!;
    numExpertsPerTok = moe.num_experts_per_tok;
    moeIntermediateSize = moe.moe_intermediate_size;
    normTopkProb = moe.norm_topk_prob ?? false;
    const step = moe.decoder_sparse_step ?? 1;
    const mlpOnly = new Set(moe.mlp_only_layers ?? []);
    for (const l of mlpOnly) if (l >= numLayers) fail(`mlp_only_layers entry ${l} is not a layer index (num_hidden_layers ${numLayers})`);
    // transformers: MoE where the layer is not mlp-only and (layer + 1) % decoder_sparse_step == 0.
    moeLayers = moeLayers.map((_, l) => !mlpOnly.has(l) && (l + 1) % step === 0);
  } else if (info.family === 'mixtral') {
    const moe = parseWith(file, mixtralSchema, json);
    numExperts = moe.num_local_experts ?? 8;
    numExpertsPerTok = moe.num_experts_per_tok ?? 2;
    moeIntermediateSize = base.intermediate_size;
    normTopkProb = true;
    moeLayers.fill(true);
  }
  if (numExperts > 0 && numExpertsPerTok > numExperts) fail(`num_experts_per_tok ${numExpertsPerTok} exceeds the ${numExperts} experts`);

  const gen = generationConfig && typeof generationConfig === 'object' ? (generationConfig as Record<string, unknown>) : {};
  const genEos = tokenIds.safeParse(gen['eos_token_id']);
  const eosTokenIds = [...new Set([...idList(base.eos_token_id), ...(genEos.success ? idList(genEos.data) : [])])];
  for (const id of eosTokenIds) if (id >= base.vocab_size) fail(`eos_token_id ${id} is outside the vocabulary (vocab_size ${base.vocab_size})`);

  const dtypeName = base.dtype ?? base.torch_dtype ?? 'bfloat16';
  const weightDtype = torchDtypes[dtypeName];
  if (weightDtype === undefined) fail(`torch_dtype ${dtypeName} is not supported (supported: ${Object.keys(torchDtypes).join(', ')})`);
  return {
    arch: info.family,
    hfArchitecture,
    vocabSize: base.vocab_size,
    hiddenSize: base.hidden_size,
    numLayers,
    numHeads,
    numKvHeads: ds?.numKvHeads ?? gqa!.numKvHeads,
    headDim: ds?.headDim ?? gqa!.headDim,
    intermediateSize: base.intermediate_size,
    rmsNormEps: base.rms_norm_eps ?? info.defaultRmsNormEps,
    ropeTheta: rope.ropeTheta,
    ropeScaling: rope.ropeScaling,
    maxPositionEmbeddings,
    tieWordEmbeddings: base.tie_word_embeddings ?? false,
    qkNorm: info.family === 'qwen3' || info.family === 'qwen3_moe',
    // Mixtral's attention never has biases (no config field).
    attentionBias: info.family === 'mixtral' ? false : (base.attention_bias ?? false),
    numExperts,
    numExpertsPerTok,
    moeIntermediateSize,
    normTopkProb,
    moeLayers,
    eosTokenIds,
    bosTokenId: base.bos_token_id ?? null,
    mla: ds?.mla ?? null,
    routing: ds?.routing ?? null,
    initializerRange: base.initializer_range ?? 0.02,
    weightDtype: weightDtype!,
  };
}
