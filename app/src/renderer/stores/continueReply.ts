/**
 * 'Continue' on a reply that max tokens cut (finish reason length): the request that asks
 * the model for more of it; what comes back is appended to the reply.
 * - A raw completion: the prompt is the user's prompt plus the reply so far.
 * - A chat reply: the conversation up to and including the cut reply, which goes as the
 *   final assistant message with vLLM's `continue_final_message: true` and
 *   `add_generation_prompt: false`, so the chat template leaves its turn open and the model
 *   goes on writing it. The structured-output and tool fields are not sent: their grammar
 *   would start over on the continued text (a reply that made tool calls is not offered).
 */
import type { ChatStart } from '@afd/shared';
import { chatApiMessages } from './apiMessages.js';
import type { ChatMessage, Sampling } from './conversations.js';

/** Whether `m` is a finished reply (raw completion, or chat text without tool calls) that stopped at max tokens. */
export function canContinue(m: Pick<ChatMessage, 'role' | 'stage' | 'mode' | 'finishReason' | 'toolCalls' | 'content'>): boolean {
  if (m.role !== 'assistant' || m.stage !== 'done' || m.finishReason !== 'length') return false;
  return m.mode === 'completion' || ((m.toolCalls ?? []).length === 0 && m.content !== '');
}

/** The request that continues reply `replyId` of `messages` with a chat's settings, or why there is none. */
export function continueRequest(messages: readonly ChatMessage[], replyId: string, settings: { systemPrompt: string; sampling: Sampling }): ChatStart | string {
  const i = messages.findIndex((m) => m.id === replyId);
  const reply = messages[i];
  if (!reply) return 'that reply is no longer in this conversation';
  if (!canContinue(reply)) return 'only a reply cut by max tokens (text, no tool calls) can be continued';
  const { sampling } = settings;
  if (reply.mode === 'chat') {
    const system = settings.systemPrompt.trim() ? [{ role: 'system' as const, content: settings.systemPrompt.trim() }] : [];
    const apiMessages = [...system, ...chatApiMessages(messages.slice(0, i + 1))];
    if (apiMessages.at(-1)?.role !== 'assistant') return 'the reply cannot be sent back as the final assistant message';
    return { mode: 'chat', messages: apiMessages, sampling, continue_final_message: true, add_generation_prompt: false };
  }
  const prompt = messages[i - 1];
  if (!prompt || prompt.role !== 'user' || prompt.mode !== 'completion') return 'the prompt this reply completes is no longer in this conversation';
  return { mode: 'completion', prompt: prompt.content + reply.content, sampling };
}
