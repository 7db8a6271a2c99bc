/**
 * The prompts of a /v1/completions request: one prompt, or a batch (an array of strings or
 * of token-id arrays, as OpenAI's API takes). A batch is submitted as one, so that its
 * prompts are admitted into the same scheduler step and decode together; it may hold at
 * most max-num-seqs prompts, the most sequences one step holds.
 */
import { ServingError } from '../ServingError.js';
import { ApiError } from './ApiError.js';
import type { CompletionRequest } from './schemas.js';

/** A prompt as text or as token ids. */
export type Prompt = string | number[];

/** The request's prompts in order (a lone string or token-id array is a batch of one). */
export function promptsOf(prompt: CompletionRequest['prompt']): Prompt[] {
  if (typeof prompt === 'string') return [prompt];
  if (typeof prompt[0] === 'number') return [prompt as number[]];
  return prompt as Prompt[];
}

/** Refuses a batch of more prompts than one scheduler step holds. */
export function checkBatchSize(count: number, maxNumSeqs: number): void {
  if (count <= maxNumSeqs) return;
  throw ApiError.badRequest(
    `prompt: a batch of ${count} prompts is more than this server admits in one request (${maxNumSeqs}, its max-num-seqs: the most sequences one step holds); send at most ${maxNumSeqs} prompts per request`,
    'prompt',
    'batch_too_large',
  );
}

/**
 * Runs a check of prompt `index` of `count`; in a batch of several, a refusal names the
 * prompt (`prompt[2]: ...`). A single prompt's errors are left as they are.
 */
export function checkPrompt<T>(index: number, count: number, check: () => T): T {
  try {
    return check();
  } catch (err) {
    if (count === 1 || !(err instanceof ServingError)) throw err;
    throw new ServingError(err.kind, `prompt[${index}]: ${err.message}`, err.param);
  }
}
