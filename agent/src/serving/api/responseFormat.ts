/**
 * What an endpoint tells generationResponse.ts about the look of its responses, and the
 * OpenAI usage and finish_reason values they carry.
 */
import type { TokenLogprob } from '../scheduler/logprobRows.js';
import type { FinishReason } from '../scheduler/Sequence.js';

export interface Usage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  /** cached_tokens: prompt tokens whose KV was reused (prefix cache) instead of computed; only when there are any (see usageOf). */
  prompt_tokens_details?: { cached_tokens: number };
}

/** OpenAI finish_reason; an aborted request never reaches the client ('tool_calls': chat, calls were read). */
export type OpenAiFinish = 'stop' | 'length' | 'tool_calls';

/** What one streamed chunk of a choice carries (a GenerationEvent delta, or several merged). */
export interface ChoiceDelta {
  text: string;
  /** Token ids behind the text. */
  tokenIds: number[];
  /** One row per token id, when the request asked for logprobs. */
  logprobs?: TokenLogprob[];
  /** On a choice's first delta, when asked: the prompt rows (entry j: prompt token j + 1). */
  promptLogprobs?: TokenLogprob[];
}

/** A finished generation: one choice of a full response. */
export interface FinishedChoice {
  text: string;
  finish: OpenAiFinish;
  /** Every generated token id. */
  tokenIds: number[];
  /** One row per generated token, when asked for. */
  logprobs: TokenLogprob[] | null;
  /** The prompt rows (entry j: prompt token j + 1), when asked for. */
  promptLogprobs: TokenLogprob[] | null;
}

export interface ResponseFormat {
  /**
   * A streamed chunk of choice `index` (its place in the response: prompt i's choices are
   * i * n .. i * n + n - 1) carrying a delta and/or the finish reason; `first` is that
   * choice's first chunk; `usage` is the choice's usage so far with continuous usage
   * stats, else null. Several chunks (sent in order), or none (null: the delta is held
   * back, e.g. text that may be tool-call markup).
   */
  chunk(index: number, delta: ChoiceDelta, finish: OpenAiFinish | null, first: boolean, usage: Usage | null): object | object[] | null;
  /** The final usage-only chunk (choices: []), summed over the prompts (each prompt once) and the choices. */
  usageChunk(usage: Usage): object;
  /** The whole non-streamed response: choice i is handle i; usage summed over the prompts (each prompt once) and the choices. */
  full(choices: FinishedChoice[], usage: Usage): object;
  /** Send a chunk for every token, even with no text yet (logprobs or token ids asked). */
  everyToken?: boolean;
}

/**
 * Usage. `cached`: prompt tokens whose KV was reused (prefix cache); reported as
 * prompt_tokens_details.cached_tokens when there are any (as vLLM with
 * --enable-prompt-tokens-details; a usage without it had none), and known only once a
 * generation ends, so continuous usage leaves it out.
 */
export function usageOf(prompt: number, completion: number, cached = 0): Usage {
  const u: Usage = { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion };
  if (cached > 0) u.prompt_tokens_details = { cached_tokens: cached };
  return u;
}

export function sumUsage(usages: Usage[]): Usage {
  return usageOf(
    usages.reduce((n, u) => n + u.prompt_tokens, 0),
    usages.reduce((n, u) => n + u.completion_tokens, 0),
    usages.reduce((n, u) => n + (u.prompt_tokens_details?.cached_tokens ?? 0), 0),
  );
}

export function openAiFinish(reason: FinishReason): 'stop' | 'length' {
  return reason === 'length' ? 'length' : 'stop';
}
