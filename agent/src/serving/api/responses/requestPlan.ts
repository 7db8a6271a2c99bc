/**
 * A validated Responses request translated to the chat machinery: the messages and the
 * template variables (tools among them) the chat template renders, the grammar text.format
 * asks for, and a chat request body holding the sampling fields, from which the chat
 * route's toGenerateParams builds the GenerateParams (so both routes sample alike).
 */
import type { GrammarSpec } from '../../grammar/grammarSpec.js';
import { ApiError } from '../ApiError.js';
import type { ChatRequest } from '../schemas.js';
import { toTemplateMessages, type TemplateMessage } from './inputMessages.js';
import { LOGPROBS_INCLUDE } from './refusedValues.js';
import type { ResponsesRequest } from './responsesSchema.js';
import { planTools, type ToolPlan } from './responseTools.js';
import { textFormatGrammar } from './textFormat.js';

export interface ResponsePlan {
  messages: TemplateMessage[];
  /** Template variables: chat_template_kwargs, and `tools` when the model is shown tools. */
  templateVars: Record<string, unknown>;
  tools: ToolPlan;
  /** What text.format constrains the output to, else null. */
  grammar: GrammarSpec | null;
  /** The sampling and stopping fields as a chat completions body (its messages unused). */
  chat: ChatRequest;
  /** The output text's logprobs are asked for (include "message.output_text.logprobs"). */
  logprobs: boolean;
}

/** Template variables the server sets from the request. */
const SERVER_VARS = new Set(['messages', 'tools', 'tool_choice', 'add_generation_prompt', 'continue_final_message', 'documents', 'chat_template']);

const bad = (param: string, message: string): ApiError => ApiError.badRequest(`${param}: ${message}`, param, 'invalid_value');

function templateKwargs(r: ResponsesRequest): Record<string, unknown> {
  const kwargs = r.chat_template_kwargs ?? {};
  for (const key of Object.keys(kwargs)) {
    if (SERVER_VARS.has(key)) throw bad(`chat_template_kwargs.${key}`, `the server renders ${key} from the request${key === 'tools' || key === 'messages' ? ` (${key === 'tools' ? 'send tools' : 'send input'})` : ''}; leave it out`);
  }
  return kwargs;
}

/** Checks the rules across fields and translates the request. */
export function planResponse(r: ResponsesRequest): ResponsePlan {
  if (r.stream_options && r.stream !== true) throw bad('stream_options', 'stream options can only be defined when stream is true; send stream: true or drop stream_options');
  const logprobs = (r.include ?? []).includes(LOGPROBS_INCLUDE);
  if (!logprobs && (r.top_logprobs ?? 0) > 0) throw bad('top_logprobs', `top_logprobs needs include: ["${LOGPROBS_INCLUDE}"], which returns the output text's logprobs`);
  const tools = planTools(r);
  if (logprobs && tools.parseCalls) {
    throw bad('include', `"${LOGPROBS_INCLUDE}" with function tools is not supported (the logprobs of call text are not the answer's); leave tools out, or send tool_choice "none"`);
  }
  const templateVars = { ...templateKwargs(r), ...(tools.templateTools.length > 0 ? { tools: tools.templateTools } : {}) };
  const chat: ChatRequest = {
    model: r.model,
    messages: [],
    temperature: r.temperature,
    top_p: r.top_p,
    top_k: r.top_k,
    seed: r.seed,
    cache_salt: r.cache_salt,
    stop: r.stop,
    repetition_penalty: r.repetition_penalty,
    logit_bias: r.logit_bias,
    ignore_eos: r.ignore_eos,
    skip_special_tokens: r.skip_special_tokens,
    include_stop_str_in_output: r.include_stop_str_in_output,
    max_completion_tokens: r.max_output_tokens,
    logprobs,
    top_logprobs: logprobs ? (r.top_logprobs ?? 0) : undefined,
  };
  return { messages: toTemplateMessages(r), templateVars, tools, grammar: textFormatGrammar(r.text?.format), chat, logprobs };
}
