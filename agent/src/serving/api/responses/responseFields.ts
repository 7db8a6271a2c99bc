/**
 * Every request field of POST /v1/responses, in one table: OpenAI's (ResponseCreateParams
 * of the openai npm client 6.x, plus max_tool_calls of the API reference) and the extra
 * fields vLLM's ResponsesRequest takes. As on the chat route, each field works, or is a 400
 * naming it that says why and what to send instead (refused; absent, null or a neutral
 * value is accepted), or is accepted with no effect for a stated reason. A field in
 * neither API is refused by name. responsesSchema.ts holds exactly these fields (a test
 * checks both ways), and docs/api.md lists them.
 *
 * This server is stateless: it stores no responses, so everything that reads or writes
 * stored state (store: true, previous_response_id, conversation, background, item
 * references) is refused, and a request must carry the whole conversation in `input`.
 */
import { ApiError } from '../ApiError.js';
import { requestFields, type FieldStatus } from '../requestFields.js';

export interface ResponseField {
  origin: 'openai' | 'vllm';
  status: FieldStatus;
}

const works = (note: string): FieldStatus => ({ kind: 'works', note });
const noEffect = (note: string): FieldStatus => ({ kind: 'no-effect', note });
const refused = (reason: string): FieldStatus => ({ kind: 'refused', reason });
/** The chat route's status of a vLLM field this route shares with it. */
const asChat = (name: string): FieldStatus => requestFields[name]!.status;

const STATELESS = 'this server stores no responses (every request is store: false)';
const NO_CACHE = "prefix caching here is automatic, by the prompt's content (--no-enable-prefix-caching turns it off)";

/** The table, ordered as the OpenAI reference, then vLLM's extra fields. */
export const responseFields: Readonly<Record<string, ResponseField>> = {
  background: { origin: 'openai', status: refused(`background responses are stored and polled, and ${STATELESS}; omit it or send false, and stream instead`) },
  context_management: { origin: 'openai', status: refused('server-side compaction is not supported; omit it and send the conversation you want the model to see') },
  conversation: { origin: 'openai', status: refused(`${STATELESS} and no conversations; omit it and send the whole conversation in input`) },
  include: { origin: 'openai', status: works('only "message.output_text.logprobs" (the output text\'s log-probabilities, with top_logprobs); any other value is a 400 naming it') },
  input: { origin: 'openai', status: works('a string, or items: messages (user, system, developer, assistant; text content), function_call and function_call_output') },
  instructions: { origin: 'openai', status: works('a system message before the input') },
  max_output_tokens: { origin: 'openai', status: works('default: up to the context window; reaching it makes the response incomplete (reason max_output_tokens)') },
  max_tool_calls: { origin: 'openai', status: noEffect("limits calls to OpenAI's built-in tools, which this server refuses; function calls are returned to the client, not run here") },
  metadata: { origin: 'openai', status: works('up to 16 string pairs, echoed in the response; nothing is stored') },
  model: { origin: 'openai', status: works('the served model name or the model directory (GET /v1/models)') },
  moderation: { origin: 'openai', status: refused('this server runs no moderation; omit it') },
  parallel_tool_calls: { origin: 'openai', status: works('default true; false keeps only the first function call of a response') },
  previous_response_id: { origin: 'openai', status: refused(`${STATELESS}, so there is no previous response to continue; omit it and send the whole conversation in input (earlier output items included)`) },
  prompt: { origin: 'openai', status: refused("reusable prompts live on OpenAI's platform; omit it and send the text as instructions and input") },
  prompt_cache_key: { origin: 'openai', status: noEffect(`a prompt-cache routing hint: the front router sends requests with the same key to the same attention rank; ${NO_CACHE}`) },
  prompt_cache_options: { origin: 'openai', status: noEffect(`prompt-cache breakpoints; ${NO_CACHE}`) },
  prompt_cache_retention: { origin: 'openai', status: noEffect(`prompt-cache lifetime; ${NO_CACHE}`) },
  reasoning: { origin: 'openai', status: refused('not mapped to this model (its thinking stays in the output text); omit it, and steer thinking with chat_template_kwargs, e.g. {"enable_thinking": false} for Qwen3') },
  safety_identifier: { origin: 'openai', status: noEffect('an end-user id for OpenAI abuse monitoring; nothing here depends on it') },
  service_tier: { origin: 'openai', status: refused('this server has one tier; omit it or send "auto" / "default"') },
  store: { origin: 'openai', status: refused(`${STATELESS}; omit it or send false (absent means not stored here, unlike OpenAI's default)`) },
  stream: { origin: 'openai', status: works('server-sent events named by type (response.created ... response.completed)') },
  stream_options: { origin: 'openai', status: works('with stream: true only; include_obfuscation: false only (nothing is padded)') },
  temperature: { origin: 'openai', status: works('0..2; 0 = greedy') },
  text: { origin: 'openai', status: works('format: text; json_object and json_schema constrain the output (the grammar engine masks every sampled token); verbosity is a 400') },
  tool_choice: { origin: 'openai', status: works('auto (default), none, required, a named function, allowed_tools (auto or required); required and a named function are forced by the grammar, so the call is valid under its parameters; other tool types are a 400') },
  tools: { origin: 'openai', status: works("function tools (name, description, parameters), shown to the model through its chat template; the model's calls come back as function_call items (its tool-call parser: --tool-call-parser, or from the chat template); strict is accepted, and calls the model makes on its own (auto) are not constrained (as vLLM); other tool types are a 400 naming them") },
  top_logprobs: { origin: 'openai', status: works('0..20, with include ["message.output_text.logprobs"]') },
  top_p: { origin: 'openai', status: works('(0, 1]') },
  truncation: { origin: 'openai', status: refused('"auto" (dropping the start of the conversation to fit) is not supported: a conversation that does not fit is a 400; omit it or send "disabled"') },
  user: { origin: 'openai', status: noEffect('an end-user id for OpenAI abuse monitoring; nothing here depends on it') },
  // vLLM's extra fields (its ResponsesRequest)
  top_k: { origin: 'vllm', status: asChat('top_k') },
  logit_bias: { origin: 'vllm', status: asChat('logit_bias') },
  seed: { origin: 'vllm', status: asChat('seed') },
  stop: { origin: 'vllm', status: asChat('stop') },
  repetition_penalty: { origin: 'vllm', status: asChat('repetition_penalty') },
  ignore_eos: { origin: 'vllm', status: asChat('ignore_eos') },
  skip_special_tokens: { origin: 'vllm', status: asChat('skip_special_tokens') },
  include_stop_str_in_output: { origin: 'vllm', status: asChat('include_stop_str_in_output') },
  request_id: { origin: 'vllm', status: works('the response id, as given (default resp_<random>)') },
  chat_template_kwargs: { origin: 'vllm', status: works('extra template variables, e.g. {"enable_thinking": false}; keys the server sets (tools, messages, ...) are refused') },
  priority: { origin: 'vllm', status: asChat('priority') },
  cache_salt: { origin: 'vllm', status: asChat('cache_salt') },
  kv_transfer_params: { origin: 'vllm', status: asChat('kv_transfer_params') },
  media_io_kwargs: { origin: 'vllm', status: asChat('media_io_kwargs') },
  mm_processor_kwargs: { origin: 'vllm', status: asChat('mm_processor_kwargs') },
  structured_outputs: { origin: 'vllm', status: refused('on /v1/responses the output format is text.format (json_object or json_schema); omit it') },
  vllm_xargs: { origin: 'vllm', status: asChat('vllm_xargs') },
  enable_response_messages: { origin: 'vllm', status: refused("vLLM's rendered input and output messages are not returned; omit it or send false") },
  previous_input_messages: { origin: 'vllm', status: refused("vLLM's Harmony-format history is not supported; send the conversation as input items") },
};

const equals = (...values: unknown[]) => (v: unknown): boolean => values.includes(v);
const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Values of refused fields that mean "off", accepted like an absent field. */
const neutralValues: Readonly<Record<string, (value: unknown) => boolean>> = {
  background: equals(false),
  context_management: (v) => Array.isArray(v) && v.length === 0,
  store: equals(false),
  service_tier: equals('auto', 'default'),
  truncation: equals('disabled'),
  priority: equals(0),
  enable_response_messages: equals(false),
  // {} or {"effort": null, "summary": null}: what a client sends when it asks for nothing.
  reasoning: (v) => isObject(v) && Object.values(v).every((x) => x === null || x === undefined),
};

const bad = (param: string, message: string, code = 'unsupported_parameter'): ApiError => ApiError.badRequest(`${param}: ${message}`, param, code);

/**
 * Refuses, before the schema, a field neither API has and a refused field with a value
 * other than absent, null or its neutral one.
 */
export function checkResponseFields(body: unknown): asserts body is Record<string, unknown> {
  if (!isObject(body)) throw ApiError.badRequest('the request body must be a JSON object', null, 'invalid_type');
  for (const [name, value] of Object.entries(body)) {
    const row = responseFields[name];
    if (!row) throw ApiError.badRequest(`Unrecognized request argument supplied: ${name}. /v1/responses takes the OpenAI and vLLM fields listed in docs/api.md; remove it`, name, 'unknown_parameter');
    const s = row.status;
    if (s.kind !== 'refused' || value === null || value === undefined || neutralValues[name]?.(value)) continue;
    throw bad(name, s.reason);
  }
}
