/**
 * A Responses request's conversation as chat messages for the model's chat template, the
 * way a chat completion would carry the same conversation:
 *
 *   instructions                    -> a system message, first
 *   message items                   -> messages of their role (developer -> system), text joined
 *   function_call items in a row    -> one assistant message with tool_calls (joining the
 *                                      assistant text message just before them, if any)
 *   function_call_output            -> a tool message with the call's tool_call_id
 *
 * Tool calls are in the chat shape ({id, type: "function", function: {name, arguments}});
 * their arguments are parsed into an object, as vLLM hands them to templates (a template
 * that prints them with tojson would otherwise print a quoted string).
 */
import { ApiError } from '../ApiError.js';
import type { ChatMessage } from '../../tokenizer/ChatTemplate.js';
import type { InputItem, ResponsesRequest, TextPart } from './responsesSchema.js';

/** A tool call of an assistant message, as chat templates take it. */
export interface TemplateToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: Record<string, unknown> };
}

/** A chat message with the tool fields chat templates read. */
export interface TemplateMessage extends ChatMessage {
  /** Assistant: the calls it made. */
  tool_calls?: TemplateToolCall[];
  /** Tool: the call this is the result of. */
  tool_call_id?: string;
}

const bad = (param: string, message: string): ApiError => ApiError.badRequest(`${param}: ${message}`, param, 'invalid_value');
const textOf = (content: string | readonly TextPart[]): string => (typeof content === 'string' ? content : content.map((p) => p.text).join(''));

/** A call's arguments, which must be a JSON object. */
function parseArguments(text: string, param: string): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw bad(param, `the arguments of a function call must be a JSON object as text; this is not JSON (${(err as Error).message})`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw bad(param, 'the arguments of a function call must be a JSON object as text');
  return value as Record<string, unknown>;
}

/** The conversation of a request (instructions first), checking that every function output answers an earlier call. */
export function toTemplateMessages(r: Pick<ResponsesRequest, 'instructions' | 'input'>): TemplateMessage[] {
  const out: TemplateMessage[] = [];
  if (r.instructions) out.push({ role: 'system', content: r.instructions });
  const items: InputItem[] = typeof r.input === 'string' ? [{ type: 'message', role: 'user', content: r.input }] : r.input;
  const calls = new Set<string>();
  items.forEach((item, i) => {
    if (item.type === 'message') {
      out.push({ role: item.role === 'developer' ? 'system' : item.role, content: textOf(item.content) });
    } else if (item.type === 'function_call') {
      const call: TemplateToolCall = { id: item.call_id, type: 'function', function: { name: item.name, arguments: parseArguments(item.arguments, `input.${i}.arguments`) } };
      calls.add(item.call_id);
      const last = out.at(-1);
      // Calls in a row, and calls right after the assistant's text, are one assistant turn.
      if (last?.role === 'assistant') (last.tool_calls ??= []).push(call);
      else out.push({ role: 'assistant', content: '', tool_calls: [call] });
    } else {
      if (!calls.has(item.call_id)) throw bad(`input.${i}.call_id`, `no function_call with call_id "${item.call_id}" comes before this output; send the function_call item (as the response returned it) before its output`);
      out.push({ role: 'tool', content: typeof item.output === 'string' ? item.output : item.output.map((p) => p.text).join(''), tool_call_id: item.call_id });
    }
  });
  return out;
}
