/**
 * Every request field of POST /v1/chat/completions and /v1/completions, in one table: the
 * OpenAI API's (openai npm client 6.x types) and vLLM's extras (ChatCompletionRequest and
 * CompletionRequest in vllm/entrypoints/openai, main as of 2025, plus the guided_* fields
 * of vLLM <= 0.11). Each one either works, or is a 400 naming it that says why and what to
 * send instead (refused; a neutral value, e.g. use_beam_search: false, is accepted), or is
 * accepted with no effect here for a stated reason (identifiers and hints about caches
 * this server does not have). schemas.ts holds exactly these fields (a test checks both
 * ways), and docs/api.md lists them.
 *
 * A field that is in neither API is refused by name (checkRequestFields), as OpenAI does
 * ("Unrecognized request argument"); vLLM logs such fields and ignores them.
 */
import { ApiError } from './ApiError.js';

export type Endpoint = 'chat' | 'completions';

export type FieldStatus =
  /** Honoured; `note` says how (docs). */
  | { kind: 'works'; note: string }
  /** A 400 naming the field unless it is absent, null or a neutral value (neutralValues); `reason` says why and what to send. */
  | { kind: 'refused'; reason: string }
  /** Accepted; `note` says why it changes nothing on this server. */
  | { kind: 'no-effect'; note: string };

export interface RequestField {
  origin: 'openai' | 'vllm';
  endpoints: readonly Endpoint[];
  status: FieldStatus;
}

const both: readonly Endpoint[] = ['chat', 'completions'];
const chat: readonly Endpoint[] = ['chat'];
const completions: readonly Endpoint[] = ['completions'];

const works = (note: string): FieldStatus => ({ kind: 'works', note });
const noEffect = (note: string): FieldStatus => ({ kind: 'no-effect', note });
const refused = (reason: string): FieldStatus => ({ kind: 'refused', reason });
const equals = (...values: unknown[]) => (v: unknown): boolean => values.includes(v);
const emptyList = (v: unknown): boolean => Array.isArray(v) && v.length === 0;

const GUIDED = "vLLM's older name for structured_outputs; the grammar engine (xgrammar) masks every sampled token";
const TEXT_ONLY = 'this server serves text-only models; omit it';

/** The table, ordered as the OpenAI reference, then vLLM's sampling and extra fields. */
export const requestFields: Readonly<Record<string, RequestField>> = {
  // OpenAI, both endpoints
  model: { origin: 'openai', endpoints: both, status: works('the served model name or the model directory (GET /v1/models)') },
  frequency_penalty: { origin: 'openai', endpoints: both, status: works('-2..2; subtracted per occurrence of a token in the output') },
  presence_penalty: { origin: 'openai', endpoints: both, status: works('-2..2; subtracted once from every token in the output') },
  logit_bias: { origin: 'openai', endpoints: both, status: works('{"token id": bias}, bias in -100..100 added to the logit; ids outside the vocabulary are a 400') },
  logprobs: { origin: 'openai', endpoints: both, status: works('chat: true/false (with top_logprobs); completions: 0..20 top tokens per token') },
  max_tokens: { origin: 'openai', endpoints: both, status: works('default: up to the context window; completions: 0 only with echo (the prompt alone)') },
  n: { origin: 'openai', endpoints: both, status: works('choices per prompt (samples with seeds seed, seed + 1, ...; one prefill of the prompt)') },
  seed: { origin: 'openai', endpoints: both, status: works('reproducible sampling (taken mod 2^32)') },
  stop: { origin: 'openai', endpoints: both, status: works('up to 16 strings; cut before them (see include_stop_str_in_output)') },
  stream: { origin: 'openai', endpoints: both, status: works('server-sent events') },
  stream_options: { origin: 'openai', endpoints: both, status: works('with stream: true only; include_usage, continuous_usage_stats (vLLM); include_obfuscation: false only') },
  temperature: { origin: 'openai', endpoints: both, status: works('0..2; 0 = greedy') },
  top_p: { origin: 'openai', endpoints: both, status: works('(0, 1]') },
  user: { origin: 'openai', endpoints: both, status: noEffect('an end-user id for OpenAI abuse monitoring; nothing here depends on it') },
  safety_identifier: { origin: 'openai', endpoints: chat, status: noEffect('an end-user id for OpenAI abuse monitoring; nothing here depends on it') },
  // OpenAI, chat
  messages: { origin: 'openai', endpoints: chat, status: works('system, developer, user, assistant (with tool_calls), tool (with tool_call_id); text content') },
  max_completion_tokens: { origin: 'openai', endpoints: chat, status: works('the newer name of max_tokens; wins over it') },
  top_logprobs: { origin: 'openai', endpoints: chat, status: works('0..20 with logprobs: true') },
  response_format: { origin: 'openai', endpoints: both, status: works('{"type": "text"}, {"type": "json_object"}, {"type": "json_schema", "json_schema": {name, schema, strict, description}}: the grammar engine masks every sampled token; structural_tag: 400') },
  tools: { origin: 'openai', endpoints: chat, status: works('function tools (unique names, parameters an object schema); the chat template lists them; strict is accepted (the grammar enforces the schema for required / named)') },
  tool_choice: { origin: 'openai', endpoints: chat, status: works('"auto" (default with tools: calls read with --tool-call-parser, finish_reason "tool_calls"), "none" (tools still in the template, text not read for calls), "required" and a named function (a grammar forces the call)') },
  parallel_tool_calls: { origin: 'openai', endpoints: chat, status: works('default true; false = at most one call (required: the grammar allows one; auto: the first call is kept)') },
  functions: { origin: 'openai', endpoints: chat, status: refused('deprecated by OpenAI; send each function as a tool, tools: [{"type": "function", "function": {...}}]') },
  function_call: { origin: 'openai', endpoints: chat, status: refused('deprecated by OpenAI; send tool_choice ("auto", "none", or {"type": "function", "function": {"name": ...}}); "none" is accepted') },
  audio: { origin: 'openai', endpoints: chat, status: refused(`audio output: ${TEXT_ONLY}`) },
  modalities: { origin: 'openai', endpoints: chat, status: refused(`only text output: ${TEXT_ONLY}, or send ["text"]`) },
  prediction: { origin: 'openai', endpoints: chat, status: refused('predicted outputs (speculative decoding from given text) are not supported; omit it') },
  store: { origin: 'openai', endpoints: chat, status: refused('this server does not store completions; omit it or send false') },
  metadata: { origin: 'openai', endpoints: chat, status: noEffect('tags stored completions; this server stores none') },
  service_tier: { origin: 'openai', endpoints: chat, status: refused('this server has one tier; omit it or send "auto" / "default"') },
  reasoning_effort: { origin: 'openai', endpoints: chat, status: refused('not mapped to this model; steer thinking with chat_template_kwargs (e.g. {"enable_thinking": false} for Qwen3)') },
  verbosity: { origin: 'openai', endpoints: chat, status: refused('not supported by this server; omit it and ask for the length in the prompt') },
  web_search_options: { origin: 'openai', endpoints: chat, status: refused('this server has no web search; omit it') },
  moderation: { origin: 'openai', endpoints: chat, status: refused('this server runs no moderation; omit it') },
  prompt_cache_key: { origin: 'openai', endpoints: chat, status: noEffect('a prompt-cache routing hint: the front router sends requests with the same key to the same attention rank; prefix caching here is automatic, by prompt content (--no-enable-prefix-caching turns it off)') },
  prompt_cache_retention: { origin: 'openai', endpoints: chat, status: noEffect('prompt-cache lifetime; prefix caching here is automatic, by prompt content (--no-enable-prefix-caching turns it off)') },
  prompt_cache_options: { origin: 'openai', endpoints: chat, status: noEffect('prompt-cache breakpoints; prefix caching here is automatic, by prompt content (--no-enable-prefix-caching turns it off)') },
  // OpenAI, completions
  prompt: { origin: 'openai', endpoints: completions, status: works('text, token ids, or a batch of either (one choice per prompt)') },
  echo: { origin: 'openai', endpoints: both, status: works('completions: the prompt before the completion (with logprobs: its tokens too, the first null); chat (vLLM): the last message\'s content before the reply when it has the reply\'s role') },
  best_of: { origin: 'openai', endpoints: completions, status: refused('OpenAI removed best_of (and vLLM with it); send n for several choices and pick on your side; 1 is accepted') },
  suffix: { origin: 'openai', endpoints: completions, status: refused('insertion (fill in the middle) is not supported by these models through this API; omit it and put the text in the prompt') },
  // vLLM sampling parameters
  top_k: { origin: 'vllm', endpoints: both, status: works('keep the k most likely tokens; 0 or -1 = off') },
  min_p: { origin: 'vllm', endpoints: both, status: works('0..1; drop tokens below min_p times the top probability') },
  repetition_penalty: { origin: 'vllm', endpoints: both, status: works('> 0; tokens in prompt or output: positive logits divided, negative multiplied; 1 = off') },
  stop_token_ids: { origin: 'vllm', endpoints: both, status: works('token ids that end generation (their text left out unless include_stop_str_in_output)') },
  include_stop_str_in_output: { origin: 'vllm', endpoints: both, status: works('keep the stop string (or stop token text) in the output') },
  ignore_eos: { origin: 'vllm', endpoints: both, status: works('keep generating past EOS') },
  min_tokens: { origin: 'vllm', endpoints: both, status: works('EOS and stop_token_ids banned, and no stop string matched, before this many tokens') },
  skip_special_tokens: { origin: 'vllm', endpoints: both, status: works('default true; false shows special tokens in the text') },
  spaces_between_special_tokens: { origin: 'vllm', endpoints: both, status: works('default true; false emits consecutive added tokens without a decoder space') },
  prompt_logprobs: { origin: 'vllm', endpoints: both, status: works('0..20; per prompt position {token id: {logprob, rank, decoded_token}}, the first null; not with stream') },
  return_tokens_as_token_ids: { origin: 'vllm', endpoints: both, status: works('logprob tokens as "token_id:<id>"') },
  return_token_ids: { origin: 'vllm', endpoints: both, status: works('prompt_token_ids and token_ids in the response') },
  truncate_prompt_tokens: { origin: 'vllm', endpoints: both, status: works('keep only this many prompt tokens (see truncation_side)') },
  truncation_side: { origin: 'vllm', endpoints: both, status: works('"left" (default) keeps the last truncate_prompt_tokens tokens, "right" the first') },
  use_beam_search: { origin: 'vllm', endpoints: both, status: refused('beam search is not supported; omit it or send false') },
  length_penalty: { origin: 'vllm', endpoints: both, status: refused('applies to beam search only, which is not supported; omit it or send 1') },
  watermarking: { origin: 'vllm', endpoints: both, status: refused('output watermarking is not supported; omit it or send false') },
  allowed_token_ids: { origin: 'vllm', endpoints: both, status: refused('not supported; ban or favour tokens with logit_bias instead') },
  bad_words: { origin: 'vllm', endpoints: both, status: refused('not supported; ban single tokens with logit_bias (-100) instead') },
  logprob_token_ids: { origin: 'vllm', endpoints: both, status: refused('not supported; ask for the top tokens with logprobs / top_logprobs') },
  // vLLM extra parameters
  request_id: { origin: 'vllm', endpoints: both, status: works('the response id becomes chatcmpl-<request_id> / cmpl-<request_id>') },
  add_special_tokens: { origin: 'vllm', endpoints: both, status: refused('only the default is supported (completions: true, chat: false); omit it') },
  add_generation_prompt: { origin: 'vllm', endpoints: chat, status: works('default true; false renders the chat without the assistant turn start') },
  continue_final_message: { origin: 'vllm', endpoints: chat, status: works('default false; true (with add_generation_prompt: false) renders the final assistant message without its end of turn, so the reply continues it (only the new text comes back)') },
  documents: { origin: 'vllm', endpoints: chat, status: refused('retrieval documents for the chat template are not supported; put them in the messages') },
  chat_template: { origin: 'vllm', endpoints: chat, status: refused("a chat template from the request is not trusted (vLLM refuses it too without --trust-request-chat-template); the model's own template is used") },
  chat_template_kwargs: { origin: 'vllm', endpoints: chat, status: works('extra template variables, e.g. {"enable_thinking": false}; keys naming a refused field, or one the server renders (tools, messages, ...), are refused') },
  mm_processor_kwargs: { origin: 'vllm', endpoints: chat, status: refused(`multimodal processor options: ${TEXT_ONLY}`) },
  media_io_kwargs: { origin: 'vllm', endpoints: chat, status: refused(`media loading options: ${TEXT_ONLY}`) },
  prompt_embeds: { origin: 'vllm', endpoints: completions, status: refused('prompt embeddings are not supported; send text or token ids as prompt') },
  structured_outputs: { origin: 'vllm', endpoints: both, status: works('one of json, regex, choice, grammar (EBNF/GBNF), json_object; disable_any_whitespace, disable_additional_properties; whitespace_pattern and structural_tag: 400') },
  guided_json: { origin: 'vllm', endpoints: both, status: works(GUIDED) },
  guided_regex: { origin: 'vllm', endpoints: both, status: works(GUIDED) },
  guided_choice: { origin: 'vllm', endpoints: both, status: works(GUIDED) },
  guided_grammar: { origin: 'vllm', endpoints: both, status: works(GUIDED) },
  structural_tag: { origin: 'vllm', endpoints: chat, status: refused('structural tags are not supported; use structured_outputs (json, regex, choice, grammar) or tools') },
  guided_decoding_backend: { origin: 'vllm', endpoints: both, status: works('"xgrammar" or "auto" (the only grammar engine here); others: 400') },
  guided_whitespace_pattern: { origin: 'vllm', endpoints: both, status: refused('a custom whitespace pattern is not supported (JSON is compact by default; structured_outputs.disable_any_whitespace: false allows any whitespace)') },
  include_reasoning: { origin: 'vllm', endpoints: chat, status: refused('this server has no reasoning parser (thinking stays in content); omit it or send true') },
  thinking_token_budget: { origin: 'vllm', endpoints: both, status: refused('not supported; turn thinking off with chat_template_kwargs instead') },
  priority: { origin: 'vllm', endpoints: both, status: refused('this server schedules first come, first served; omit it or send 0') },
  session_id: { origin: 'vllm', endpoints: both, status: noEffect('a session identity for routing; the front router routes by prompt prefix (or prompt_cache_key) and load, not by session') },
  logits_processors: { origin: 'vllm', endpoints: both, status: refused('custom logits processors are not supported; use logit_bias, penalties, min_p / top_k') },
  cache_salt: { origin: 'vllm', endpoints: both, status: works('the prefix-cache domain: a request reuses only KV blocks cached by requests with the same salt (tenant isolation)') },
  kv_transfer_params: { origin: 'vllm', endpoints: both, status: refused('disaggregated prefill (KV transfer) is not supported; omit it') },
  ec_transfer_params: { origin: 'vllm', endpoints: both, status: refused('encoder-cache transfer is not supported; omit it') },
  vllm_xargs: { origin: 'vllm', endpoints: both, status: refused('custom extension parameters are not supported; omit it') },
  repetition_detection: { origin: 'vllm', endpoints: both, status: refused('n-gram repetition detection is not supported; use repetition_penalty or frequency_penalty') },
  stream_interval: { origin: 'vllm', endpoints: both, status: refused('every token is streamed as it comes; omit it or send 1') },
  routed_experts_prompt_start: { origin: 'vllm', endpoints: both, status: refused('routed-expert data is not returned; omit it or send 0') },
  return_token_offsets: { origin: 'vllm', endpoints: both, status: refused('only for the render endpoints, which this server does not have; omit it or send false') },
  return_mm_kwargs: { origin: 'vllm', endpoints: both, status: refused('only for the render endpoints, which this server does not have; omit it or send true') },
  return_prompt_text: { origin: 'vllm', endpoints: chat, status: refused('not supported; render the chat yourself, or send return_token_ids for the prompt token ids') },
};

/** Values of refused fields that mean "off" (the API's defaults), accepted like an absent field. */
const neutralValues: Readonly<Record<string, (value: unknown, endpoint: Endpoint) => boolean>> = {
  functions: emptyList,
  function_call: equals('none'),
  modalities: (v) => Array.isArray(v) && v.every((m) => m === 'text'),
  store: equals(false),
  service_tier: equals('auto', 'default'),
  best_of: equals(1),
  suffix: equals(''),
  use_beam_search: equals(false),
  length_penalty: equals(1),
  watermarking: equals(false),
  bad_words: emptyList,
  add_special_tokens: (v, e) => v === (e === 'completions'),
  include_reasoning: equals(true),
  thinking_token_budget: equals(-1),
  priority: equals(0),
  stream_interval: equals(1),
  routed_experts_prompt_start: equals(0),
  return_token_offsets: equals(false),
  return_mm_kwargs: equals(true),
  return_prompt_text: equals(false),
};

/** The fields one endpoint takes. */
export function fieldsOf(endpoint: Endpoint): string[] {
  return Object.keys(requestFields).filter((name) => requestFields[name]!.endpoints.includes(endpoint));
}

/** The 400 a refused field gets (also for a chat_template_kwargs key smuggling it, named by `param`). */
export function refusal(name: string, param = name): ApiError | null {
  const row = requestFields[name];
  if (row?.status.kind !== 'refused') return null;
  return ApiError.badRequest(`${param}: ${row.status.reason}`, param, 'unsupported_parameter');
}

/**
 * Refuses, before the schema, a field neither API has (or the other endpoint's), and a
 * refused field with a value other than absent, null or its neutral one.
 */
export function checkRequestFields(body: unknown, endpoint: Endpoint): void {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw ApiError.badRequest('the request body must be a JSON object', null, 'invalid_type');
  const path = endpoint === 'chat' ? '/v1/chat/completions' : '/v1/completions';
  for (const [name, value] of Object.entries(body)) {
    const row = requestFields[name];
    if (!row) throw ApiError.badRequest(`Unrecognized request argument supplied: ${name}. ${path} takes the OpenAI and vLLM fields listed in docs/api.md; remove it`, name, 'unknown_parameter');
    if (!row.endpoints.includes(endpoint)) {
      const other = endpoint === 'chat' ? '/v1/completions' : '/v1/chat/completions';
      throw ApiError.badRequest(`${name} is a ${other} field; ${path} does not take it`, name, 'unknown_parameter');
    }
    const s = row.status;
    if (s.kind !== 'refused' || value === null || value === undefined || neutralValues[name]?.(value, endpoint)) continue;
    throw refusal(name)!;
  }
}
