/** OpenAI chat messages as the model's chat template takes them (chat completions and /tokenize). */
import type { z } from 'zod';
import type { ChatMessage, TemplateToolCall } from '../tokenizer/ChatTemplate.js';
import type { TemplateToolStyle } from '../tools/templateToolStyle.js';
import { ApiError } from './ApiError.js';
import type { chatMessageSchema } from './schemas.js';

type Message = z.infer<typeof chatMessageSchema>;

/** Text of a message's content (text parts joined), or null when it has none. */
export function contentText(m: Pick<Message, 'content'>): string | null {
  if (m.content === null || m.content === undefined) return null;
  return typeof m.content === 'string' ? m.content : m.content.map((p) => p.text).join('');
}

/** A call's arguments for the template: parsed to an object (vLLM's rule: empty = {}), or the text as sent. */
function templateArguments(text: string, asText: boolean, param: string): Record<string, unknown> | string {
  if (asText) return text;
  if (text.trim() === '') return {};
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    throw ApiError.badRequest(`${param}: the arguments of a tool call must be JSON text (${(err as Error).message})`, param, 'invalid_value');
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw ApiError.badRequest(`${param}: the arguments of a tool call must be a JSON object`, param, 'invalid_value');
  return parsed as Record<string, unknown>;
}

/**
 * `developer` becomes `system` (templates know no developer role); text parts are joined;
 * an assistant's tool calls and a tool message's tool_call_id go along, in the form the
 * template reads (`style`, see templateToolStyle.ts).
 */
export function toTemplateMessages(messages: readonly Message[], style: TemplateToolStyle = { argumentsAsText: false, nullContent: false }): ChatMessage[] {
  return messages.map((m, i) => {
    const content = contentText(m);
    const out: ChatMessage = { role: m.role === 'developer' ? 'system' : m.role, content: content ?? (style.nullContent && m.role === 'assistant' ? null : '') };
    if (m.name) out.name = m.name;
    if (m.tool_calls && m.tool_calls.length > 0) {
      out.tool_calls = m.tool_calls.map(
        (c, j): TemplateToolCall => ({ id: c.id, type: 'function', function: { name: c.function.name, arguments: templateArguments(c.function.arguments, style.argumentsAsText, `messages.${i}.tool_calls.${j}.function.arguments`) } }),
      );
    }
    if (m.tool_call_id) out.tool_call_id = m.tool_call_id;
    return out;
  });
}

/** The text of the messages that counts toward the prompt's length (contents and tool call arguments). */
export function messageTexts(messages: readonly ChatMessage[]): string[] {
  return messages.flatMap((m) => [m.content ?? '', ...(m.tool_calls ?? []).map((c) => (typeof c.function.arguments === 'string' ? c.function.arguments : JSON.stringify(c.function.arguments)))]);
}
