/**
 * The decode side of prefill/decode disaggregation: what the serving engine asks before it
 * queues a request (ServingEngine.submitAllAsync), and what it gets back.
 */
import type { GenerateParams } from '../ServingEngine.js';
import type { Scheduler } from '../scheduler/Scheduler.js';
import type { KvHold } from '../scheduler/KvImports.js';

/** One KV transfer from a prefill rank, as the request's trace and the metrics see it. */
export interface PdTransfer {
  /** The prefill rank that computed the prompt. */
  prefillRank: number;
  /** Prompt tokens whose KV came over (whole blocks). */
  tokens: number;
  /** KV (and state) bytes received. */
  bytes: number;
  /** From the request sent to the last byte in (prefill + transfer), ms. */
  transferMs: number;
  /** The prefill rank's own time from queueing the prompt to its KV computed, ms. */
  prefillMs: number;
  /** Tokens the prefill rank found in its prefix cache. */
  cachedTokens: number;
  /** Prefill ranks that were lost mid-request before this one served it. */
  retries: number;
  /** How the KV came: over TCP, or copied from the prefill rank's memory (bytes then count what was copied). */
  transport: 'peer' | 'tcp';
}

/** A prompt whose first full blocks arrived, held for the request's samples. */
export interface ImportedPrompt {
  hold: KvHold;
  /** Prompt tokens the prefill rank found in its prefix cache (usage's cached_tokens). */
  cachedTokens: number;
  transfer: PdTransfer;
}

/** Where an attention rank gets long prompts prefilled (RemotePrefiller). */
export interface RemotePrefillLike {
  /**
   * The KV of the first full blocks of the request's prompt, written into blocks the
   * scheduler holds for it; null: prefill it here (too short, no room, no prefill rank up,
   * the prefill failed: a reason is counted and logged). Never throws for a prefill rank's
   * fault.
   */
  importFor(params: GenerateParams, scheduler: Scheduler): Promise<ImportedPrompt | null>;
}
