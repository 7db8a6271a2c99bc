/**
 * The values of supported /v1/responses fields that this server cannot serve, refused by
 * name before the schema with a reason (the schema alone would answer "invalid input"):
 * input items and content parts other than text, messages and function calls; tools other
 * than functions; tool_choice types of those tools; include values other than the output
 * text's logprobs. `param` is the value's path, as the schema's errors name fields
 * ("input.2.type", "tools.0.type").
 */
import { ApiError } from '../ApiError.js';

const TEXT_ONLY = 'this server serves text-only models; send text (input_text) instead';
const HOSTED_TOOL = "runs on OpenAI's platform, which this server is not; it runs function tools only (type \"function\"), whose calls the client carries out";
const STATELESS_ITEM = 'this server stores no responses, so there is nothing to refer to; send the item itself';

/** Input item types, other than messages and function calls, with why each is refused. */
const refusedItemTypes: Readonly<Record<string, string>> = {
  item_reference: STATELESS_ITEM,
  reasoning: 'this server returns no reasoning items (thinking stays in the output text); drop them from the input',
  compaction: 'compaction items come from server-side compaction, which this server does not do; drop them',
  compaction_trigger: 'server-side compaction is not supported; drop it',
};

/** Content part types other than text, with why each is refused. */
const refusedPartTypes: Readonly<Record<string, string>> = {
  input_image: TEXT_ONLY,
  input_file: TEXT_ONLY,
  input_audio: TEXT_ONLY,
  refusal: 'this server returns no refusal parts; send the text as output_text',
};

/** Every include value OpenAI takes, and why each one but the output text's logprobs is refused. */
const refusedIncludes: Readonly<Record<string, string>> = {
  'file_search_call.results': 'file_search is an OpenAI-hosted tool this server does not run',
  'web_search_call.results': 'web_search is an OpenAI-hosted tool this server does not run',
  'web_search_call.action.sources': 'web_search is an OpenAI-hosted tool this server does not run',
  'message.input_image.image_url': TEXT_ONLY,
  'computer_call_output.output.image_url': 'the computer tool is OpenAI-hosted and not run here',
  'code_interpreter_call.outputs': 'code_interpreter is an OpenAI-hosted tool this server does not run',
  'reasoning.encrypted_content': 'this server returns no reasoning items (thinking stays in the output text)',
};

export const LOGPROBS_INCLUDE = 'message.output_text.logprobs';

const bad = (param: string, message: string): ApiError => ApiError.badRequest(`${param}: ${message}`, param, 'unsupported_value');
const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const typeOf = (v: unknown): unknown => (isObject(v) ? v['type'] : undefined);

function checkParts(content: unknown, at: string): void {
  if (!Array.isArray(content)) return;
  content.forEach((part, j) => {
    const t = typeOf(part);
    if (typeof t === 'string' && Object.hasOwn(refusedPartTypes, t)) throw bad(`${at}.${j}.type`, `${t} parts: ${refusedPartTypes[t]}`);
  });
}

function checkInput(input: unknown): void {
  if (!Array.isArray(input)) return;
  input.forEach((item, i) => {
    const t = typeOf(item);
    if (t === undefined || t === 'message') return checkParts(isObject(item) ? item['content'] : undefined, `input.${i}.content`);
    if (t === 'function_call') return;
    if (t === 'function_call_output') return checkParts(isObject(item) ? item['output'] : undefined, `input.${i}.output`);
    if (typeof t !== 'string') return; // the schema names it
    const why = refusedItemTypes[t] ?? `${t} items belong to OpenAI-hosted tools or stored state, which this server does not have; send messages, function_call and function_call_output items`;
    throw bad(`input.${i}.type`, `${t}: ${why}`);
  });
}

function checkTools(tools: unknown): void {
  if (!Array.isArray(tools)) return;
  tools.forEach((tool, i) => {
    const t = typeOf(tool);
    if (t === 'function' || typeof t !== 'string') return;
    const why = t === 'custom' ? 'custom (free-form text) tools are not supported; define a function tool with a JSON schema' : `a ${t} tool ${HOSTED_TOOL}`;
    throw bad(`tools.${i}.type`, `${t}: ${why}`);
  });
}

function checkToolChoice(choice: unknown): void {
  const t = typeOf(choice);
  if (t === undefined || t === 'function' || t === 'allowed_tools' || typeof t !== 'string') return;
  throw bad('tool_choice.type', `${t}: only function tools run here, so tool_choice is "none", "auto", "required", {"type": "function", "name": ...} or {"type": "allowed_tools", ...}`);
}

function checkInclude(include: unknown): void {
  if (!Array.isArray(include)) return;
  include.forEach((value, i) => {
    if (value === LOGPROBS_INCLUDE || typeof value !== 'string') return;
    const why = refusedIncludes[value] ?? `not a value this server knows; only "${LOGPROBS_INCLUDE}" is supported`;
    throw bad(`include.${i}`, `"${value}": ${why}`);
  });
}

/** Refuses input items, content parts, tools, tool_choice and include values this server cannot serve. */
export function checkResponseValues(body: Record<string, unknown>): void {
  checkInput(body['input']);
  checkTools(body['tools']);
  checkToolChoice(body['tool_choice']);
  checkInclude(body['include']);
}
