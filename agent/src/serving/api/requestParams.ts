/**
 * From a validated OpenAI request to the serving layer's GenerateParams, with the checks
 * that span fields (vLLM's validators: stream_options only with stream, prompt_logprobs not
 * with stream, top_logprobs only with logprobs). Single fields are checked by
 * checkRequestFields (requestFields.ts) and the zod schemas before this.
 */
import type { GenerateParams } from '../ServingEngine.js';
import { ApiError } from './ApiError.js';
import { refusal, requestFields, type Endpoint } from './requestFields.js';
import type { ChatRequest, CompletionRequest } from './schemas.js';

type Common = CompletionRequest | ChatRequest;

/** What the response shaping needs to know besides GenerateParams. */
export interface ResponseOptions {
  /** Logprob tokens as "token_id:<id>". */
  tokensAsIds: boolean;
  /** prompt_token_ids and token_ids in the response. */
  returnTokenIds: boolean;
  /** Top log-probabilities per generated token, when asked. */
  logprobs: number | undefined;
  /** The vLLM prompt_logprobs field, when asked. */
  promptLogprobs: number | undefined;
}

const bad = (param: string, message: string): ApiError => ApiError.badRequest(`${param}: ${message}`, param, 'invalid_value');

/** Checks the cross-field rules both endpoints share. */
function checkCommon(body: Common): void {
  if (body.stream_options && body.stream !== true) throw bad('stream_options', 'stream options can only be defined when stream is true; send stream: true or drop stream_options');
  if (body.prompt_logprobs !== null && body.prompt_logprobs !== undefined && body.stream) {
    throw bad('prompt_logprobs', 'prompt_logprobs are not available when stream is true; send stream: false (on /v1/completions, echo with logprobs streams the prompt tokens\' log-probabilities)');
  }
}

/** The top-k of generated-token logprobs a request asks for, or undefined. */
function logprobsOf(body: Common, endpoint: Endpoint): number | undefined {
  if (endpoint === 'completions') return (body as CompletionRequest).logprobs ?? undefined;
  const r = body as ChatRequest;
  if (!r.logprobs && (r.top_logprobs ?? 0) > 0) throw bad('top_logprobs', 'when using top_logprobs, logprobs must be set to true');
  return r.logprobs ? (r.top_logprobs ?? 0) : undefined;
}

/** The prompt's last (truncation_side left, default) or first truncate_prompt_tokens tokens. */
function truncated(body: Common, promptIds: number[]): number[] {
  const k = body.truncate_prompt_tokens;
  if (!k || k >= promptIds.length) return promptIds;
  return body.truncation_side === 'right' ? promptIds.slice(0, k) : promptIds.slice(promptIds.length - k);
}

/** The response options of a request (logprobs, prompt logprobs, token ids). */
export function responseOptions(body: Common, endpoint: Endpoint): ResponseOptions {
  const logprobs = logprobsOf(body, endpoint);
  // vLLM: echo asks the prompt's logprobs at the request's own k unless prompt_logprobs says.
  const promptLogprobs = body.prompt_logprobs ?? (body.echo ? logprobs : undefined);
  return { tokensAsIds: body.return_tokens_as_token_ids === true, returnTokenIds: body.return_token_ids === true, logprobs, promptLogprobs };
}

/** Checks the fields both endpoints share and builds the sampling, stop and logprob part of the params. */
export function toGenerateParams(body: Common, promptIds: number[], endpoint: Endpoint): GenerateParams {
  checkCommon(body);
  const opts = responseOptions(body, endpoint);
  let maxTokens = endpoint === 'chat' ? ((body as ChatRequest).max_completion_tokens ?? body.max_tokens) : body.max_tokens;
  if (maxTokens === 0) {
    if (!body.echo) throw bad('max_tokens', 'max_tokens 0 generates nothing; send at least 1, or 0 with echo: true for the prompt alone');
    maxTokens = 1; // as vLLM: one token is generated and dropped; the prompt's logprobs come with it
  }
  const topK = body.top_k ?? 0;
  const params: GenerateParams = {
    promptIds: truncated(body, promptIds),
    sampling: {
      temperature: body.temperature ?? 1,
      topP: body.top_p ?? 1,
      topK: topK < 0 ? 0 : topK,
      minP: body.min_p ?? 0,
      seed: body.seed === null || body.seed === undefined ? undefined : body.seed >>> 0,
    },
    maxTokens: maxTokens ?? undefined,
    stop: body.stop === null || body.stop === undefined ? [] : typeof body.stop === 'string' ? [body.stop] : body.stop,
    stopTokenIds: body.stop_token_ids ?? [],
    ignoreEos: body.ignore_eos ?? false,
    n: body.n ?? 1,
    minTokens: body.min_tokens ?? 0,
    includeStopStrInOutput: body.include_stop_str_in_output ?? false,
    skipSpecialTokens: body.skip_special_tokens ?? true,
    spacesBetweenSpecialTokens: body.spaces_between_special_tokens ?? true,
  };
  if (body.cache_salt) params.cacheSalt = body.cache_salt;
  const penalties = { presence: body.presence_penalty ?? 0, frequency: body.frequency_penalty ?? 0, repetition: body.repetition_penalty ?? 1 };
  if (penalties.presence !== 0 || penalties.frequency !== 0 || penalties.repetition !== 1) params.penalties = penalties;
  if (body.logit_bias && Object.keys(body.logit_bias).length > 0) params.logitBias = new Map(Object.entries(body.logit_bias).map(([id, b]) => [Number(id), b]));
  if (opts.logprobs !== undefined) params.logprobs = opts.logprobs;
  if (opts.promptLogprobs !== undefined) params.promptLogprobs = opts.promptLogprobs;
  return params;
}

/** Template variables the server sets from the request's own fields. */
const TEMPLATE_OWN = new Set(['messages', 'tools', 'tool_choice', 'response_format', 'add_generation_prompt', 'continue_final_message', 'documents', 'chat_template']);

/**
 * Refuses chat_template_kwargs keys that would smuggle a refused field into the template
 * (logits_processors, ...) or stand for a request field (tools, response_format, ...).
 */
export function checkChatOnly(body: ChatRequest): void {
  for (const key of Object.keys(body.chat_template_kwargs ?? {})) {
    const param = `chat_template_kwargs.${key}`;
    const refused = refusal(key, param);
    if (refused) throw refused;
    if (TEMPLATE_OWN.has(key)) throw bad(param, `the server renders ${key} from the request${requestFields[key] ? `; send the top-level ${key} field` : ''}`);
  }
}
