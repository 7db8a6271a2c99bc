/**
 * How a bridge push about a streaming reply changes its message: pure, so the chat store
 * only finds the message and applies the change.
 */
import type { BridgePush } from '@afd/shared';
import { foldToolCallFragments } from '../../common/toolCallStream.js';
import { computeMessageStats } from '../lib/streamStats.js';
import type { ChatMessage } from './conversations.js';

type ChatPush = BridgePush<'chat.delta'> | BridgePush<'chat.done'> | BridgePush<'chat.error'> | BridgePush<'chat.accepted'>;
/** A push with its channel. */
export type TaggedChatPush = { channel: 'chat.delta' | 'chat.done' | 'chat.error' | 'chat.accepted'; payload: ChatPush };

/** The change push `p` makes to live reply `msg` (null: none). */
export function pushChange(msg: ChatMessage, { channel, payload }: TaggedChatPush): Partial<ChatMessage> | null {
  switch (channel) {
    case 'chat.accepted':
      return msg.stage === 'queued' ? { stage: 'prefill' } : null;
    case 'chat.delta': {
      const d = payload as BridgePush<'chat.delta'>;
      const calls = d.toolCalls?.length ? { toolCalls: foldToolCallFragments(msg.toolCalls ?? [], d.toolCalls) } : {};
      const tokens = d.tokens?.length ? { tokens: [...(msg.tokens ?? []), ...d.tokens] } : {};
      return { content: msg.content + d.text, ...calls, ...tokens, stage: 'decode', chunkTimesMs: [...msg.chunkTimesMs, d.timings.sinceStartMs] };
    }
    case 'chat.done': {
      const d = payload as BridgePush<'chat.done'>;
      const stats = computeMessageStats({
        chunkTimesMs: msg.chunkTimesMs,
        usageCompletionTokens: d.usage.completionTokens || undefined,
        usagePromptTokens: d.usage.promptTokens || undefined,
        endMs: d.timings.totalMs,
      });
      // The service measured TTFT where the bytes arrived; prefer it.
      if (d.timings.ttftMs !== null) stats.ttftMs = d.timings.ttftMs;
      return d.finishReason === 'aborted' ? { stage: 'stopped', stats } : { stage: 'done', stats, finishReason: d.finishReason };
    }
    case 'chat.error':
      return { stage: 'error', error: (payload as BridgePush<'chat.error'>).message };
  }
}
