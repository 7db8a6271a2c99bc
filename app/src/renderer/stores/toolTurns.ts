/**
 * Tool turns of a conversation: which tool calls the user has answered (a tool message
 * names each answered call), and which calls wait for a result now. Only the newest
 * reply's calls can be answered, and only while nothing but tool results follows it: a
 * result belongs right after the call, before the conversation moves on.
 */
import type { StreamedToolCall } from '../../common/toolCallStream.js';
import type { ChatMessage } from './conversations.js';

/** Ids of the calls that have a tool message. */
export function answeredCallIds(messages: readonly ChatMessage[]): Set<string> {
  return new Set(messages.flatMap((m) => (m.role === 'tool' && m.toolCall ? [m.toolCall.id] : [])));
}

/** A finished tool call: it has an id and a name (a stopped reply may hold a call cut short). */
export const isWholeCall = (c: StreamedToolCall): boolean => c.id !== '' && c.name !== '';

export interface PendingToolCalls {
  /** The reply that made the calls. */
  assistantId: string;
  /** Its calls that have no result yet, in order. */
  unanswered: StreamedToolCall[];
  /** How many calls it made. */
  total: number;
}

/**
 * The calls that wait for the user's results: those of the newest reply when it finished
 * with tool calls and only tool results follow it; null when none wait.
 */
export function pendingToolCalls(messages: readonly ChatMessage[]): PendingToolCalls | null {
  let i = messages.length - 1;
  while (i >= 0 && messages[i]!.role === 'tool') i--;
  const reply = messages[i];
  if (!reply || reply.role !== 'assistant' || reply.stage !== 'done') return null;
  const calls = (reply.toolCalls ?? []).filter(isWholeCall);
  if (calls.length === 0) return null;
  const answered = answeredCallIds(messages.slice(i + 1));
  const unanswered = calls.filter((c) => !answered.has(c.id));
  return unanswered.length > 0 ? { assistantId: reply.id, unanswered, total: calls.length } : null;
}
