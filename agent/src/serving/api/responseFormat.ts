/**
 * What an endpoint tells generationResponse.ts about the look of its responses, and the
 * OpenAI usage and finish_reason values they carry.
 */
import type { FinishReason } from '../scheduler/Sequence.js';

export interface Usage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
}

/** OpenAI finish_reason; an aborted request never reaches the client. */
export type OpenAiFinish = 'stop' | 'length';

/** A finished generation: one choice of a full response. */
export interface FinishedChoice {
  text: string;
  finish: OpenAiFinish;
}

export interface ResponseFormat {
  /**
   * A streamed chunk of choice `index` (prompt p's sample j is choice p * n + j) carrying text
   * and/or the finish reason; `first` is that choice's first chunk; `usage` is the choice's
   * usage so far with continuous usage stats, else null.
   */
  chunk(index: number, text: string, finish: OpenAiFinish | null, first: boolean, usage: Usage | null): object;
  /** The final usage-only chunk (choices: []), summed over the prompts (each prompt once) and the choices. */
  usageChunk(usage: Usage): object;
  /** The whole non-streamed response: choice p * n + j is prompt p's sample j; usage as in usageChunk. */
  full(choices: FinishedChoice[], usage: Usage): object;
}

export function usageOf(prompt: number, completion: number): Usage {
  return { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion };
}

export function sumUsage(usages: Usage[]): Usage {
  return usageOf(
    usages.reduce((n, u) => n + u.prompt_tokens, 0),
    usages.reduce((n, u) => n + u.completion_tokens, 0),
  );
}

export function openAiFinish(reason: FinishReason): OpenAiFinish {
  return reason === 'length' ? 'length' : 'stop';
}
