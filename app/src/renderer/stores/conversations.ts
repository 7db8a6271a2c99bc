/**
 * The Playground's conversations as plain data: messages with their streaming state and
 * per-message stats and tool calls, titles, and the requests a send, a regenerate, an
 * edit-and-resend or a tool result makes from a conversation's history. No store, no
 * bridge: the chat store uses these.
 */
import type { ChatSampling, ChatStart, ChatTokenLogprob } from '@afd/shared';
import type { StreamedToolCall } from '../../common/toolCallStream.js';
import type { MessageStats } from '../lib/streamStats.js';
import { chatApiMessages } from './apiMessages.js';
import type { ChatRequestFields } from './requestFields.js';

export type ChatMode = 'chat' | 'completion';
export type MessageStage = 'queued' | 'prefill' | 'decode' | 'done' | 'stopped' | 'error';

/** Why a finished reply ended, as the API said. */
export type FinishReason = 'stop' | 'length' | 'tool_calls';

export interface ChatMessage {
  id: string;
  /** tool: the result of a tool call, typed by the user. */
  role: 'system' | 'user' | 'assistant' | 'tool';
  content: string;
  /** Assistant messages: where generation is. */
  stage: MessageStage;
  /** Service chat id once known. */
  chatId: string | null;
  /** Wall clock at send (epoch ms), for the elapsed clock. */
  startedAtMs: number;
  /** Arrival of each text chunk, ms since chat.start (service clock); not kept in storage. */
  chunkTimesMs: number[];
  stats: MessageStats | null;
  /** Why it failed (stage error), or a note on how it ended. */
  error: string | null;
  /** Chat message or raw completion prompt/continuation. */
  mode: ChatMode;
  /** Assistant messages: the tool calls the model made (while streaming, as far as they came); absent when none. */
  toolCalls?: StreamedToolCall[];
  /** Tool messages: the call this result answers. */
  toolCall?: { id: string; name: string };
  /** Assistant messages: why the reply ended, once it did (absent for older messages and stopped ones). */
  finishReason?: FinishReason;
  /** Assistant messages: each token with its log-probability and top alternatives (the token view); absent when not asked for. */
  tokens?: ChatTokenLogprob[];
}

export interface Conversation {
  id: string;
  title: string;
  /** The user named it: sending no longer retitles it. */
  renamed: boolean;
  createdAtMs: number;
  updatedAtMs: number;
  messages: ChatMessage[];
  /** This chat's own system prompt and sampling; absent: it uses the Playground's defaults. */
  own?: { systemPrompt: string; sampling: Sampling };
}

/** A chat's sampling, stop strings and token view: what chat.start carries (shared's chatSamplingSchema). */
export type Sampling = ChatSampling;

/** Messages kept per conversation. */
export const MAX_MESSAGES = 200;
/** Conversations kept; the least recently used go first. */
export const MAX_CONVERSATIONS = 100;
export const UNTITLED = 'New chat';

export const LIVE_STAGES: readonly MessageStage[] = ['queued', 'prefill', 'decode'];
export const isLive = (m: Pick<ChatMessage, 'stage'>): boolean => LIVE_STAGES.includes(m.stage);

let seq = 0;
export const newId = (prefix: string): string => `${prefix}${Date.now().toString(36)}${(seq++).toString(36)}${Math.random().toString(36).slice(2, 6)}`;

export function newConversation(nowMs: number): Conversation {
  return { id: newId('c'), title: UNTITLED, renamed: false, createdAtMs: nowMs, updatedAtMs: nowMs, messages: [] };
}

/** A title from the first line of the first message (at most 48 characters). */
export function titleFrom(text: string): string {
  const line = text.trim().split('\n', 1)[0]!.trim();
  if (line === '') return UNTITLED;
  return line.length > 48 ? `${line.slice(0, 47)}…` : line;
}

export function userMessage(text: string, mode: ChatMode, nowMs: number): ChatMessage {
  return { id: newId('m'), role: 'user', content: text, stage: 'done', chatId: null, startedAtMs: nowMs, chunkTimesMs: [], stats: null, error: null, mode };
}

/** An empty reply (queued) to `last`, a user message or a tool result. */
export function replyTo(last: ChatMessage, nowMs: number): ChatMessage {
  return { id: newId('m'), role: 'assistant', content: '', stage: 'queued', chatId: null, startedAtMs: nowMs, chunkTimesMs: [], stats: null, error: null, mode: last.mode };
}

/** The user's result for tool call `call`. */
export function toolResultMessage(call: { id: string; name: string }, text: string, nowMs: number): ChatMessage {
  return { id: newId('m'), role: 'tool', content: text, stage: 'done', chatId: null, startedAtMs: nowMs, chunkTimesMs: [], stats: null, error: null, mode: 'chat', toolCall: { id: call.id, name: call.name } };
}

export function validateSampling(s: Sampling): string | null {
  if (!(s.temperature >= 0 && s.temperature <= 2)) return 'temperature must be between 0 and 2';
  if (!(s.topP > 0 && s.topP <= 1)) return 'top-p must be in (0, 1]';
  if (!Number.isInteger(s.topK) || s.topK < 0) return 'top-k must be a whole number >= 0 (0 = off)';
  if (!Number.isInteger(s.maxTokens) || s.maxTokens < 1) return 'max tokens must be a whole number >= 1';
  if (s.seed !== null && (!Number.isInteger(s.seed) || s.seed < 0 || s.seed > 0xffffffff)) return 'seed must be a whole number from 0 to 4294967295, or empty';
  if (!(s.minP >= 0 && s.minP <= 1)) return 'min-p must be between 0 and 1 (0 = off)';
  if (!(s.presencePenalty >= -2 && s.presencePenalty <= 2)) return 'presence penalty must be between -2 and 2 (0 = off)';
  if (!(s.frequencyPenalty >= -2 && s.frequencyPenalty <= 2)) return 'frequency penalty must be between -2 and 2 (0 = off)';
  if (!(s.repetitionPenalty > 0)) return 'repetition penalty must be above 0 (1 = off)';
  if (s.stop.length > 16) return `at most 16 stop strings (there are ${s.stop.length})`;
  if (s.topLogprobs !== null && (!Number.isInteger(s.topLogprobs) || s.topLogprobs < 0 || s.topLogprobs > 20)) return 'token view alternatives must be a whole number from 0 to 20';
  return null;
}

/**
 * The chat.start request for a reply to the last message of `history` (a user message or
 * a tool result): a chat over the conversation's chat messages (see chatApiMessages) with
 * the structured-output and tool fields, or a raw completion of that prompt.
 */
export function replyRequest(history: readonly ChatMessage[], systemPrompt: string, sampling: Sampling, fields: ChatRequestFields = {}): ChatStart {
  const last = history.at(-1);
  if (!last || (last.role !== 'user' && last.role !== 'tool')) throw new Error('console bug: a reply needs a user message or a tool result to answer');
  if (last.mode === 'completion') return { mode: 'completion', prompt: last.content, sampling };
  const system = systemPrompt.trim() ? [{ role: 'system' as const, content: systemPrompt.trim() }] : [];
  return { mode: 'chat', messages: [...system, ...chatApiMessages(history)], sampling, ...fields };
}

/** The history a regenerate of `replyId` answers again: up to and including the user message or tool result before it. */
export function historyBefore(messages: readonly ChatMessage[], replyId: string): ChatMessage[] | string {
  const i = messages.findIndex((m) => m.id === replyId);
  if (i < 0) return 'that reply is no longer in this conversation';
  let j = i - 1;
  while (j >= 0 && messages[j]!.role !== 'user' && messages[j]!.role !== 'tool') j--;
  if (j < 0) return 'there is no message before this reply to answer again';
  return messages.slice(0, j + 1);
}

/** The history an edit of user message `userId` resends: what came before it, then the edited message. */
export function historyEdited(messages: readonly ChatMessage[], userId: string, text: string): ChatMessage[] | string {
  const i = messages.findIndex((m) => m.id === userId);
  if (i < 0 || messages[i]!.role !== 'user') return 'that message is no longer in this conversation';
  return [...messages.slice(0, i), { ...messages[i]!, content: text }];
}
