/**
 * A conversation as the chat API's messages: user text, replies (with the tool calls the
 * user answered), and tool results with their `tool_call_id`. Left out: raw-completion
 * messages, failed replies, empty ones, and tool calls without a result (the API wants
 * every call of an assistant message answered; a call the user skipped by typing on is
 * dropped rather than sent unanswered).
 */
import type { ChatMessageInput } from '@afd/shared';
import type { ChatMessage } from './conversations.js';
import { answeredCallIds, isWholeCall } from './toolTurns.js';

export function chatApiMessages(history: readonly ChatMessage[]): ChatMessageInput[] {
  const answered = answeredCallIds(history);
  const out: ChatMessageInput[] = [];
  for (const m of history) {
    if (m.mode !== 'chat') continue;
    if (m.role === 'user') out.push({ role: 'user', content: m.content });
    else if (m.role === 'tool' && m.toolCall) out.push({ role: 'tool', content: m.content, tool_call_id: m.toolCall.id });
    else if (m.role === 'assistant' && m.stage !== 'error') {
      const calls = (m.toolCalls ?? []).filter((c) => isWholeCall(c) && answered.has(c.id));
      if (m.content === '' && calls.length === 0) continue;
      out.push({
        role: 'assistant',
        content: m.content === '' ? null : m.content,
        ...(calls.length > 0 ? { tool_calls: calls.map((c) => ({ id: c.id, type: 'function' as const, function: { name: c.name, arguments: c.arguments } })) } : {}),
      });
    }
  }
  return out;
}
