/**
 * What the serving engine takes and gives (ServingEngine.ts): a request's parameters, the
 * events of its stream, the handle of one sample, and the engine's options.
 */
import type { SamplingParams } from '@afd/shared';
import type { GrammarBackend } from './grammar/maskedStep.js';
import type { GrammarSpec } from './grammar/grammarSpec.js';
import type { PdTransfer, RemotePrefillLike } from './pd/remotePrefill.js';
import type { SchedulerConfig } from './scheduler/Scheduler.js';
import type { TokenLogprob } from './scheduler/logprobRows.js';
import type { FinishReason, Penalties } from './scheduler/Sequence.js';
import type { ServingError } from './ServingError.js';

/** What a caller asks to generate. */
export interface GenerateParams {
  promptIds: number[];
  /** Sampling; seed undefined draws a random one (per sample). */
  sampling: Omit<SamplingParams, 'seed'> & { seed?: number | undefined };
  /** Samples of this prompt (OpenAI `n`, default 1); sample i uses seed + i (mod 2^32). */
  n?: number | undefined;
  /** Most tokens to generate; undefined = up to the context window. */
  maxTokens?: number | undefined;
  /** Text that ends generation (not included in the output unless includeStopStrInOutput). */
  stop?: string[];
  /** Token ids that end generation. */
  stopTokenIds?: number[];
  /** Keep going past EOS (benchmarks). */
  ignoreEos?: boolean;
  /** vLLM's presence, frequency and repetition penalties (default off). */
  penalties?: Penalties;
  /** Additive logit biases by token id (OpenAI logit_bias; ids must lie in the vocabulary). */
  logitBias?: ReadonlyMap<number, number>;
  /** Generate at least this many tokens: EOS and stop ids are banned and stop strings not looked for before. */
  minTokens?: number;
  /** Keep the stop string (or the stop token's text) in the output. */
  includeStopStrInOutput?: boolean;
  /** Leave special tokens out of the text (default true). */
  skipSpecialTokens?: boolean;
  /** Default true; false emits an added token that follows another without a decoder's space. */
  spacesBetweenSpecialTokens?: boolean;
  /** Top log-probabilities of each generated token (0..20); undefined = none. */
  logprobs?: number;
  /** Top log-probabilities of each prompt token (0..20); undefined = none. */
  promptLogprobs?: number;
  /**
   * What every output token must follow (structured outputs, a forced tool call); submit
   * with submitAllAsync.
   * The output ends where the grammar ends (its EOS), with ignoreEos too; minTokens holds
   * the stop ids back only while the grammar can go on.
   */
  grammar?: GrammarSpec;
  /** Prefix-cache domain (vLLM's cache_salt): the request reuses only KV cached under the same salt. */
  cacheSalt?: string | undefined;
}

export type GenerationEvent =
  /**
   * New text (may be empty when a token completes no character yet) and the token ids behind
   * it; `logprobs` (one per token id) when asked for, and on the first delta `promptLogprobs`
   * (entry j: prompt token j + 1; the first prompt token has none) when asked for.
   */
  | { type: 'delta'; text: string; tokenIds: number[]; logprobs?: TokenLogprob[]; promptLogprobs?: TokenLogprob[] }
  /** `cachedTokens`: prompt tokens whose KV was reused (prefix cache, or a sibling sample's), not computed. */
  | { type: 'done'; finishReason: FinishReason; promptTokens: number; completionTokens: number; cachedTokens: number }
  | { type: 'error'; error: ServingError };

export interface ServingOptions {
  scheduler: Omit<SchedulerConfig, 'maxModelLen' | 'numStateSlots'>;
  /** Requests that would wait (the running batch is full) beyond this many waiting are refused with 429. */
  maxQueuedRequests: number;
  /** Compiles grammars and computes masks; without it a request with a grammar is a 400. */
  grammar?: GrammarBackend;
  /** Reuse the KV of prompt prefixes seen before (kv/BlockManager.ts); default off here, on in a role (servingConfig); never with info.numStateSlots > 0. */
  prefixCaching?: boolean;
  /** Attention rank with prefill ranks: where long prompts are prefilled (pd/RemotePrefiller.ts); omitted = here. */
  remotePrefill?: RemotePrefillLike;
}

export interface RequestHandle {
  id: string;
  promptTokens: number;
  /** Which of its prompt's n samples this is (0..n-1); usage counts the prompt once, with sample 0. */
  sampleIndex: number;
  events: AsyncIterable<GenerationEvent>;
  /** Stops the request (client went away); frees its KV blocks. */
  abort(): void;
  /** Set when a prefill rank computed its prompt's first blocks (prefill/decode disaggregation). */
  pdTransfer?: PdTransfer;
}
