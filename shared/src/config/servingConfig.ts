/**
 * Serving limits of a rank (vLLM's scheduler and cache config): how many sequences and
 * tokens a step takes, how many requests may wait, and how the KV cache is sized. One
 * schema, with its defaults here and nowhere else; the launch spec carries it for every
 * rank, a role process reads it from its rank config, and the role flags of the same
 * names (`--max-num-seqs` ...) set its fields.
 */
import { z } from 'zod';

/** KV cache budget on the CPU backend when neither kvCacheMib nor kvMemoryFraction is given (MiB). */
export const DEFAULT_KV_CACHE_MIB = 256;
/** Share of the device memory free after the weights that the KV cache takes on CUDA by default. */
export const DEFAULT_KV_MEMORY_FRACTION = 0.9;

export const servingConfigSchema = z
  .strictObject({
    /** --max-num-seqs: most sequences per step (default 64). */
    maxNumSeqs: z.int().min(1).max(1 << 20).default(64),
    /**
     * --max-num-batched-tokens: token budget per step (default 2048). Connector peer and the
     * device exchanges of expert parallelism size their buffers from it: give every rank of
     * a topology the same.
     */
    maxNumBatchedTokens: z.int().min(1).max(1 << 24).default(2048),
    /** --max-model-len: context window cap in tokens; null = the model's max_position_embeddings (default null). */
    maxModelLen: z.int().min(2).max(1 << 24).nullable().default(null),
    /** --max-queued-requests: waiting requests beyond this get 429 (default 1024). */
    maxQueuedRequests: z.int().min(0).max(1 << 24).default(1024),
    /** --kv-cache-mib: a fixed KV cache budget in MiB (any backend); null = by backend (see kvCacheSizing). */
    kvCacheMib: z.int().min(1).max(1 << 24).nullable().default(null),
    /** --kv-memory-fraction: CUDA: share of the device memory free after the weights for the KV cache; null = by backend. */
    kvMemoryFraction: z.number().gt(0).max(0.99).nullable().default(null),
    /** --kv-block-size: tokens per KV block (default 16). */
    kvBlockSize: z.int().min(1).max(1024).default(16),
    /**
     * --enable-prefix-caching / --no-enable-prefix-caching: attention ranks reuse the KV of
     * prompt prefixes they have computed before (content-addressed full blocks). null (the
     * default): on, except for a model with linear-attention (gdn) layers, whose per-sequence
     * recurrent state KV blocks do not hold: off there (and true is then an error).
     */
    enablePrefixCaching: z.boolean().nullable().default(null),
    /** --tokenizer-workers: threads that tokenise prompts off the event loop; null = one per 8 cores, 1 to 4. */
    tokenizerWorkers: z.int().min(1).max(64).nullable().default(null),
  })
  .refine((o) => o.kvCacheMib === null || o.kvMemoryFraction === null, {
    message: 'give kvCacheMib or kvMemoryFraction, not both (one fixes the KV budget, the other derives it from free memory)',
    path: ['kvMemoryFraction'],
  });
export type ServingConfig = z.output<typeof servingConfigSchema>;
export type ServingConfigInput = z.input<typeof servingConfigSchema>;

/**
 * The engine's KV sizing from a serving config: kvCacheMib is a fixed budget (any backend);
 * otherwise on CUDA the cache takes a share of the free device memory (kvMemoryFraction,
 * default 0.9, as serving engines do), and on the CPU a fixed DEFAULT_KV_CACHE_MIB.
 */
export function kvCacheSizing(serving: Pick<ServingConfig, 'kvCacheMib' | 'kvMemoryFraction'>, backend: 'cpu' | 'cuda'): { kvCacheBytes: number; kvMemoryFraction?: number } {
  const kvCacheBytes = (serving.kvCacheMib ?? DEFAULT_KV_CACHE_MIB) * 2 ** 20;
  if (backend !== 'cuda' || serving.kvCacheMib !== null) return { kvCacheBytes };
  return { kvCacheBytes, kvMemoryFraction: serving.kvMemoryFraction ?? DEFAULT_KV_MEMORY_FRACTION };
}
