/**
 * The serving loop's hooks for metrics (ServingMetrics implements them) and what they are
 * told about a request.
 */
import type { FinishReason } from './scheduler/Sequence.js';

/** What a request asked for (vLLM's request_params_* histograms). */
export interface RequestParamsInfo {
  /** Completions asked for (1 until `n` > 1 is served). */
  n: number;
  /** Most tokens it may generate (the request's max_tokens, else what the context window leaves). */
  maxTokens: number;
}

/**
 * Times of an ended request's phases that close at its end (seconds); null when the request
 * ended before its first token. Queue and prefill times are reported as they close.
 */
export interface RequestPhases {
  /** First token -> last token. */
  decodeS: number | null;
  /** Scheduled -> last token (prefill + decode). */
  inferenceS: number | null;
}

/**
 * Hooks for metrics; every time is in seconds, measured from when the request was added
 * (after tokenisation). The phases follow vLLM: queue (added -> first scheduled), prefill
 * (scheduled -> first token), decode (first -> last token); a preemption does not restart them.
 */
export interface ServingObserver {
  onRequestStart(promptTokens: number, params: RequestParamsInfo): void;
  /** The request left the waiting queue: its first step was scheduled, `queueS` after it was added. */
  onRequestScheduled(queueS: number): void;
  /** Prefill done: the first token, `ttftS` after the request was added, `prefillS` after it was scheduled. */
  onFirstToken(ttftS: number, prefillS: number): void;
  onNextToken(itlS: number): void;
  /** A step sampled tokens; `numTokens` is vLLM's count: each sampled token, plus the prompt of a sequence with its first token. */
  onIteration(numTokens: number): void;
  /** A sequence was admitted: tokens looked up in shared (prefix-cached) KV blocks and how many were found. */
  onPrefixCacheLookup(queriedTokens: number, hitTokens: number): void;
  /** `error`: the engine failed the request (a failed step); `abort`: the client or the server stopped it. */
  onRequestEnd(e2eS: number, completionTokens: number, reason: FinishReason | 'error', phases: RequestPhases): void;
}
