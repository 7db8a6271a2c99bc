/**
 * Options of a launch that every agent applies to its own ranks: how a rank that dies is
 * restarted, and the serving limits passed to every rank's role command. Part of the
 * launch spec (launch.ts), so agents of one launch all apply the same ones.
 */
import { z } from 'zod';

/** What an agent does when one of its ranks exits without being asked to. */
export const restartPolicySchema = z.strictObject({
  /**
   * on-failure: restart the rank with exponential back-off (the block's other ranks wait
   * for it and reconnect); never: leave it failed (the launch reports failed). Default never
   * (the console restarts by hand); `afd-agent launch` sends on-failure unless told otherwise.
   */
  policy: z.enum(['on-failure', 'never']).default('never'),
  /**
   * Most restarts of one rank in a row: a rank that stays ready for a minute starts
   * counting from zero again. One more failure and the launch fails. Default 10.
   */
  maxRestarts: z.int().min(0).max(1000).default(10),
  /** Back-off before the first restart, ms; doubled for each further one. Default 1000. */
  backoffMs: z.int().min(0).max(600_000).default(1000),
  /** Longest back-off, ms. Default 30000. */
  maxBackoffMs: z.int().min(0).max(3_600_000).default(30_000),
});
export type RestartPolicy = z.output<typeof restartPolicySchema>;

/**
 * Serving limits of every rank (the `afd-agent role` flags of the same names); omitted =
 * the role's default. Attention and colocated ranks take all of them; FFN ranks take
 * maxNumBatchedTokens (connector peer sizes its inboxes from it).
 */
export const rankServingOptionsSchema = z
  .strictObject({
    /** --max-num-seqs: most sequences per step. */
    maxNumSeqs: z.int().min(1).optional(),
    /** --max-num-batched-tokens: token budget per step. */
    maxNumBatchedTokens: z.int().min(1).optional(),
    /** --max-model-len: context window cap (tokens). */
    maxModelLen: z.int().min(2).optional(),
    /** --max-queued-requests: waiting requests beyond this get 429. */
    maxQueuedRequests: z.int().min(0).optional(),
    /** --kv-cache-mib: KV cache size in MiB. */
    kvCacheMib: z.int().min(1).optional(),
    /** --kv-memory-fraction: share of free device memory the KV cache takes (CUDA). */
    kvMemoryFraction: z.number().gt(0).max(0.99).optional(),
  })
  .refine((o) => o.kvCacheMib === undefined || o.kvMemoryFraction === undefined, {
    message: 'give kvCacheMib or kvMemoryFraction, not both (one fixes the KV budget, the other derives it from free memory)',
    path: ['kvMemoryFraction'],
  });
export type RankServingOptions = z.output<typeof rankServingOptionsSchema>;
