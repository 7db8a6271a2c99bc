/**
 * The scheduler's configuration and what a scheduled step is made of (Scheduler.ts).
 */
import type { StepPlan } from '@afd/shared';
import type { TokenLogprob } from './logprobRows.js';
import type { FinishReason, Sequence } from './Sequence.js';
import type { DboConfig } from './stageSplit.js';

export interface SchedulerConfig {
  /** Most sequences in one step. */
  maxNumSeqs: number;
  /** Token budget of one step (prefill chunks + decodes). */
  maxNumBatchedTokens: number;
  /** Longest prompt chunk of one sequence in one step (0 = up to the budget). */
  longPrefillTokenThreshold: number;
  /** Context window: prompt + output tokens of one sequence. */
  maxModelLen: number;
  /** Dual-batch overlap split settings. */
  dbo: DboConfig;
  /**
   * The engine's recurrent-state slots (EngineModelInfo.numStateSlots): 0 or absent = the
   * model keeps no per-sequence state; else at least maxNumSeqs, and the BlockManager's
   * prefix caching must be off.
   */
  numStateSlots?: number;
}

/** One sequence's share of a step. */
export interface PlanEntry {
  seq: Sequence;
  /** Tokens computed this step, from position seq.numComputedTokens on. */
  numNewTokens: number;
  /** True when the step ends at the sequence's last known token, so the next one is sampled. */
  sample: boolean;
  /** Set when the sequence was admitted from the queue this step: its tokens looked up in shared KV blocks, and those found. */
  prefixLookup?: { queriedTokens: number; hitTokens: number };
}

/** A scheduled step: the plan for the engine and the sequences it covers, in plan order. */
export interface ScheduledStep {
  plan: StepPlan;
  entries: PlanEntry[];
}

/** A token the step produced for a sequence. */
export interface SeqOutput {
  seq: Sequence;
  tokenId: number;
  /** Set when this token ended the sequence. */
  finishReason: FinishReason | null;
  /** The token's log-probability row, when the sequence asks for logprobs. */
  logprobs?: TokenLogprob;
}

/**
 * Prefix-sharing counters (what vllm:prefix_cache_queries / vllm:prefix_cache_hits report):
 * every sequence admitted from the queue looks up its tokens; the samples of one prompt
 * find its shared blocks.
 */
export interface PromptSharingCounters {
  /** Tokens (prompt, plus output when recomputed after preemption) of every sequence admitted. */
  numLookedUpTokens: number;
  /** Of those, tokens taken from another sample's KV blocks instead of computed. */
  numSharedTokens: number;
}
