/**
 * From a validated OpenAI request to the serving layer's GenerateParams, rejecting fields
 * we cannot honour with a message that says what to send instead.
 */
import type { GenerateParams } from '../ServingEngine.js';
import { ApiError } from './ApiError.js';
import type { ChatRequest, CompletionRequest } from './schemas.js';

type Common = CompletionRequest | ChatRequest;

function unsupported(param: string, what: string): ApiError {
  return ApiError.badRequest(`${param}: ${what}`, param, 'unsupported_parameter');
}

/** Checks the fields both endpoints share and builds the sampling/stop part of the params. */
export function toGenerateParams(body: Common, promptIds: number[], maxTokens: number | null | undefined): GenerateParams {
  if (body.presence_penalty) throw unsupported('presence_penalty', 'penalties are not supported; omit it or send 0');
  if (body.frequency_penalty) throw unsupported('frequency_penalty', 'penalties are not supported; omit it or send 0');
  if (body.logprobs) throw unsupported('logprobs', 'log probabilities are not supported; omit it');
  const topK = body.top_k ?? 0;
  return {
    promptIds,
    n: body.n ?? 1,
    sampling: {
      temperature: body.temperature ?? 1,
      topP: body.top_p ?? 1,
      topK: topK < 0 ? 0 : topK,
      seed: body.seed === null || body.seed === undefined ? undefined : body.seed >>> 0,
    },
    maxTokens: maxTokens ?? undefined,
    stop: body.stop === null || body.stop === undefined ? [] : typeof body.stop === 'string' ? [body.stop] : body.stop,
    stopTokenIds: body.stop_token_ids ?? [],
    ignoreEos: body.ignore_eos ?? false,
  };
}

export function checkCompletionOnly(body: CompletionRequest): void {
  if (body.echo) throw unsupported('echo', 'echo is not supported; omit it');
  if ((body.best_of ?? 1) > 1) throw unsupported('best_of', 'best_of > 1 is not supported; omit it');
  if (body.suffix) throw unsupported('suffix', 'suffix (insertion) is not supported; omit it');
}

export function checkChatOnly(body: ChatRequest): void {
  if (body.tools && body.tools.length > 0) throw unsupported('tools', 'tool calling is not supported; omit tools');
  if (body.top_logprobs) throw unsupported('top_logprobs', 'log probabilities are not supported; omit it');
}
