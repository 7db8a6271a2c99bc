/**
 * The checks of a request before it is queued: its prompt and max_tokens against the
 * context window, n against max-num-seqs, token ids against the vocabulary, min_tokens
 * against what it may generate. Each failure is a ServingError naming the field.
 */
import type { GenerateParams } from './ServingEngine.js';
import { ServingError } from './ServingError.js';

/** What a request is checked against. */
export interface RequestLimits {
  /** Longest prompt + output of one request. */
  maxContextTokens: number;
  /** Sequences the rank runs at once. */
  maxNumSeqs: number;
  vocabSize: number;
}

/** Checks a request against the context window (`limit` tokens); returns the effective max tokens. `promptParam` names the prompt's field in errors. */
export function checkLength(limit: number, promptTokens: number, maxTokens: number | undefined, promptParam: string): number {
  if (promptTokens === 0) throw new ServingError('invalid_request', 'the prompt is empty; send at least one token', 'prompt');
  if (promptTokens >= limit) {
    throw new ServingError(
      'context_length_exceeded',
      `This model's maximum context length is ${limit} tokens. However, your prompt has ${promptTokens} tokens, leaving no room for output. Shorten the prompt.`,
      promptParam,
    );
  }
  if (maxTokens === undefined) return limit - promptTokens;
  if (promptTokens + maxTokens > limit) {
    throw new ServingError(
      'context_length_exceeded',
      `This model's maximum context length is ${limit} tokens. However, you requested ${promptTokens + maxTokens} tokens (${promptTokens} in the prompt, ${maxTokens} in the completion). Reduce the prompt or max_tokens.`,
      'max_tokens',
    );
  }
  return maxTokens;
}

/**
 * Checks a request against the context window, max-num-seqs (its n samples run together)
 * and the vocabulary (prompt, logit_bias and stop_token_ids ids); returns the effective max
 * tokens. `promptParam` names the prompt's field in errors ('prompt' on /v1/completions,
 * 'messages' on chat).
 */
export function checkRequest(params: GenerateParams, limits: RequestLimits, promptParam: string): number {
  const n = params.n ?? 1;
  const maxSeqs = limits.maxNumSeqs;
  if (!Number.isInteger(n) || n < 1) throw new ServingError('invalid_request', `n must be a positive integer, got ${n}`, 'n');
  if (n > maxSeqs) {
    throw new ServingError('invalid_request', `n=${n} is more than this server runs at once (max-num-seqs ${maxSeqs}): the n samples of a prompt run together; send n <= ${maxSeqs}`, 'n');
  }
  const maxTokens = checkLength(limits.maxContextTokens, params.promptIds.length, params.maxTokens, promptParam);
  const vocab = limits.vocabSize;
  const outside = (ids: Iterable<number>): number | undefined => [...ids].find((t) => !Number.isInteger(t) || t < 0 || t >= vocab);
  const fields: [string, Iterable<number>, string][] = [
    ['prompt', params.promptIds, 'token id'],
    ['logit_bias', params.logitBias?.keys() ?? [], 'logit_bias token id'],
    ['stop_token_ids', params.stopTokenIds ?? [], 'stop token id'],
  ];
  for (const [param, ids, what] of fields) {
    const bad = outside(ids);
    if (bad !== undefined) throw new ServingError('invalid_request', `${what} ${bad} is outside the vocabulary [0, ${vocab})`, param === 'prompt' ? promptParam : param);
  }
  if ((params.minTokens ?? 0) > maxTokens) throw new ServingError('invalid_request', `min_tokens (${params.minTokens}) is more than the ${maxTokens} tokens this request may generate; lower min_tokens`, 'min_tokens');
  return maxTokens;
}
