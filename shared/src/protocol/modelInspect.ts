/**
 * `model.inspect`: what an agent finds in a model directory on its host, asked while the
 * user types a path on the Topology screen so a bad one is refused before any rank
 * starts. The config (architecture, size) and the weights (safetensors present, bytes) are
 * reported separately: a directory with config.json and a tokenizer but no weights is
 * `config-only` (servable with random weights under load format dummy), not refused.
 */
import { z } from 'zod';
import { processRoleSchema } from './role.js';

/** Params of model.inspect. */
export const modelInspectParamsSchema = z.object({
  /** Absolute path of the HF checkpoint directory on the agent host. */
  dir: z.string().min(1).max(4096).startsWith('/', 'must be an absolute path on the agent host'),
});

const bytes = z.number().nonnegative();

/** What config.json says about the model. */
export const modelConfigSummarySchema = z.object({
  /** HF architectures[0], e.g. "Qwen3MoeForCausalLM". */
  architecture: z.string(),
  /** Engine family, e.g. "qwen3_moe". */
  family: z.string(),
  /** Decoder layers. */
  numLayers: z.int().positive(),
  /** Hidden size. */
  hiddenSize: z.int().positive(),
  /** Routed experts per MoE layer; 0 for dense models. */
  numExperts: z.int().nonnegative(),
  /** Experts chosen per token; 0 for dense models. */
  numExpertsPerTok: z.int().nonnegative(),
  /** Vocabulary size. */
  vocabSize: z.int().positive(),
  /** Context window of the model (max_position_embeddings). */
  maxPositionEmbeddings: z.int().positive(),
  /** Parameters of every tensor the engine loads. */
  parameters: z.int().nonnegative(),
  /** Of numLayers, those of linear attention (Gated DeltaNet: Qwen3-Next, Qwen3.5); absent or 0 for attention-only models. */
  linearAttentionLayers: z.int().nonnegative().optional(),
  /** Weight bytes each role keeps resident (the checkpoint's dtypes; bf16 when there are no weights). */
  roleBytes: z.object({ colocated: bytes, attention: bytes, ffn: bytes }),
});
export type ModelConfigSummary = z.infer<typeof modelConfigSummarySchema>;

/** Result of model.inspect. */
export const modelInspectResultSchema = z.object({
  /** The directory inspected (absolute, normalised). */
  dir: z.string(),
  /**
   * ready: config, weights and tokenizer check out; config-only: config.json and the
   * tokenizer but no safetensors weights (needs load format dummy); refused: cannot be
   * served (see reason).
   */
  status: z.enum(['ready', 'config-only', 'refused']),
  /** Why it is refused, what a config-only directory needs, or the limit of a ready one (no tokenizer); null otherwise. */
  reason: z.string().nullable(),
  /** The config's summary; null when config.json is missing or invalid. */
  config: modelConfigSummarySchema.nullable(),
  /** The safetensors weights. */
  weights: z.object({
    /** Whether model.safetensors or a shard index is there. */
    present: z.boolean(),
    /** Safetensors files. */
    files: z.int().nonnegative(),
    /** Their total size. */
    bytes,
  }),
  /** tokenizer.json and tokenizer_config.json (attention and colocated ranks need them). */
  tokenizer: z.object({
    /** Both files are there. */
    present: z.boolean(),
    /** tokenizer_config.json has a chat template (else only raw completions work). */
    chatTemplate: z.boolean(),
  }),
  /** Roles this directory can run as it is (empty when refused). */
  roles: z.array(processRoleSchema),
});
export type ModelInspectResult = z.infer<typeof modelInspectResultSchema>;
