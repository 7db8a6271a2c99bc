/**
 * The Response object (`object: "response"`) and its output items, in the shapes of the
 * openai npm client's types (Response, ResponseOutputMessage, ResponseFunctionToolCall,
 * ResponseUsage). The request's settings are echoed as OpenAI echoes them, with this
 * server's values where it decides (store false, truncation "disabled", service_tier
 * "default"). `output_text` is not sent: OpenAI's clients compute it from the output.
 */
import { randomUUID } from 'node:crypto';
import type { Usage } from '../responseFormat.js';
import type { ParsedOutput } from './outputParser.js';
import type { ResponsesRequest } from './responsesSchema.js';

export type ItemStatus = 'in_progress' | 'completed' | 'incomplete';
export type ResponseStatus = 'in_progress' | 'completed' | 'incomplete' | 'failed';

/** An id with OpenAI's prefix: resp_, msg_, fc_, call_. */
export const newId = (prefix: string): string => `${prefix}_${randomUUID().replaceAll('-', '')}`;

/** output_text content: the answer's text, no annotations, its tokens' logprobs (when asked; else []). */
export interface OutputTextPart {
  type: 'output_text';
  text: string;
  annotations: never[];
  logprobs: object[];
}

export interface MessageItem {
  id: string;
  type: 'message';
  status: ItemStatus;
  role: 'assistant';
  content: OutputTextPart[];
}

export interface FunctionCallItem {
  id: string;
  type: 'function_call';
  status: ItemStatus;
  call_id: string;
  name: string;
  arguments: string;
}

export type OutputItem = MessageItem | FunctionCallItem;

export interface ResponseUsage {
  input_tokens: number;
  input_tokens_details: { cached_tokens: number; cache_write_tokens: number };
  output_tokens: number;
  output_tokens_details: { reasoning_tokens: number };
  total_tokens: number;
}

/** Usage in the Responses shape (cached_tokens: prompt tokens reused from the prefix cache); no reasoning tokens are told apart. */
export function responseUsage(u: Usage): ResponseUsage {
  return {
    input_tokens: u.prompt_tokens,
    input_tokens_details: { cached_tokens: u.prompt_tokens_details?.cached_tokens ?? 0, cache_write_tokens: 0 },
    output_tokens: u.completion_tokens,
    output_tokens_details: { reasoning_tokens: 0 },
    total_tokens: u.total_tokens,
  };
}

/** The fields of a Response that come from the request and its id, the same in every event. */
export type ResponseShell = Record<string, unknown> & { id: string };

export function responseShell(r: ResponsesRequest, id: string, createdAt: number): ResponseShell {
  return {
    id,
    object: 'response',
    created_at: createdAt,
    background: false,
    instructions: r.instructions ?? null,
    max_output_tokens: r.max_output_tokens ?? null,
    max_tool_calls: r.max_tool_calls ?? null,
    metadata: r.metadata ?? {},
    model: r.model,
    parallel_tool_calls: r.parallel_tool_calls ?? true,
    previous_response_id: null,
    prompt_cache_key: r.prompt_cache_key ?? null,
    reasoning: null,
    safety_identifier: r.safety_identifier ?? null,
    service_tier: 'default',
    store: false,
    temperature: r.temperature ?? 1,
    text: { format: r.text?.format ?? { type: 'text' } },
    tool_choice: r.tool_choice ?? 'auto',
    tools: (r.tools ?? []).map((t) => ({ type: 'function', name: t.name, description: t.description ?? null, parameters: t.parameters ?? null, strict: t.strict ?? null })),
    top_logprobs: r.top_logprobs ?? 0,
    top_p: r.top_p ?? 1,
    truncation: 'disabled',
    user: r.user ?? null,
  };
}

/** Where a response stands: what changes between its events. */
export interface ResponseState {
  status: ResponseStatus;
  output: OutputItem[];
  usage: ResponseUsage | null;
  /** A failed response's error (code as OpenAI's ResponseError). */
  error?: { code: string; message: string } | null;
}

export function responseBody(shell: ResponseShell, s: ResponseState): object {
  const done = s.status === 'completed' || s.status === 'incomplete';
  return {
    ...shell,
    status: s.status,
    completed_at: s.status === 'completed' ? Math.floor(Date.now() / 1000) : null,
    error: s.error ?? null,
    incomplete_details: s.status === 'incomplete' ? { reason: 'max_output_tokens' } : null,
    output: s.output,
    usage: done ? s.usage : null,
  };
}

export const messageItem = (id: string, status: ItemStatus, text: string, logprobs: object[]): MessageItem => ({
  id,
  type: 'message',
  status,
  role: 'assistant',
  content: [{ type: 'output_text', text, annotations: [], logprobs }],
});

export const functionCallItem = (id: string, status: ItemStatus, callId: string, name: string, args: string): FunctionCallItem => ({
  id,
  type: 'function_call',
  status,
  call_id: callId,
  name,
  arguments: args,
});

/**
 * A whole output's items: the answer's text as a message (left out when there are calls
 * and the text is only whitespace), then a function_call item per call (only the first
 * without parallel tool calls).
 */
export function outputItems(parsed: ParsedOutput, status: ItemStatus, logprobs: object[], parallelToolCalls: boolean): OutputItem[] {
  const calls = parallelToolCalls ? parsed.toolCalls : parsed.toolCalls.slice(0, 1);
  const text = parsed.content ?? '';
  const items: OutputItem[] = [];
  if (calls.length === 0 || text.trim() !== '') items.push(messageItem(newId('msg'), status, text, logprobs));
  for (const c of calls) items.push(functionCallItem(newId('fc'), status, c.id || newId('call'), c.name, c.arguments));
  return items;
}
