/**
 * 'Continue' on a reply that max tokens cut (finish reason length): the request that asks
 * the model for more of it. Raw completions only: the prompt is the user's prompt plus the
 * reply so far, and what comes back is appended to the reply. Chat replies cannot be
 * continued yet: the API refuses `continue_final_message` on /v1/chat/completions, and
 * without it a chat template closes the assistant turn before the model writes again.
 */
import type { ChatStart } from '@afd/shared';
import type { ChatMessage, Sampling } from './conversations.js';

/** Whether `m` is a finished raw-completion reply that stopped at max tokens. */
export function canContinue(m: Pick<ChatMessage, 'role' | 'stage' | 'mode' | 'finishReason'>): boolean {
  return m.role === 'assistant' && m.stage === 'done' && m.mode === 'completion' && m.finishReason === 'length';
}

/** The completion request that continues reply `replyId` of `messages`, or why there is none. */
export function continueRequest(messages: readonly ChatMessage[], replyId: string, sampling: Sampling): ChatStart | string {
  const i = messages.findIndex((m) => m.id === replyId);
  const reply = messages[i];
  if (!reply) return 'that reply is no longer in this conversation';
  if (!canContinue(reply)) return 'only a raw-completion reply cut by max tokens can be continued';
  const prompt = messages[i - 1];
  if (!prompt || prompt.role !== 'user' || prompt.mode !== 'completion') return 'the prompt this reply completes is no longer in this conversation';
  return { mode: 'completion', prompt: prompt.content + reply.content, sampling };
}
