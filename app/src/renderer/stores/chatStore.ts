/**
 * Playground conversation: messages with their streaming state, per-message stats kept
 * with the message, the sampling settings and the chat/completion mode. Pushes for a
 * chat can arrive before chat.start's answer; they wait in a small buffer.
 */
import { createStore, type StoreApi } from 'zustand/vanilla';
import type { BridgePush, BridgeRequestInput } from '@afd/shared';
import type { RendererBridge } from '../bridge/types.js';
import { computeMessageStats, type MessageStats } from '../lib/streamStats.js';

export type ChatMode = 'chat' | 'completion';
export type MessageStage = 'queued' | 'prefill' | 'decode' | 'done' | 'stopped' | 'error';

export interface ChatMessage {
  id: string;
  role: 'system' | 'user' | 'assistant';
  content: string;
  /** Assistant messages: where generation is. */
  stage: MessageStage;
  /** Service chat id once known. */
  chatId: string | null;
  /** Renderer clock (performance.now) at send, for the elapsed clock. */
  startedAtMs: number;
  /** Arrival of each text chunk, ms since chat.start (service clock). */
  chunkTimesMs: number[];
  stats: MessageStats | null;
  /** Why it failed (stage error). */
  error: string | null;
  /** The prompt of a raw completion (so the view can show it). */
  mode: ChatMode;
}

export interface Sampling {
  temperature: number;
  topP: number;
  topK: number;
  maxTokens: number;
  /** Empty = random. */
  seed: number | null;
}

export interface ChatState {
  mode: ChatMode;
  systemPrompt: string;
  sampling: Sampling;
  messages: ChatMessage[];
  /** A send failure (no topology, invalid settings). */
  error: string | null;
  setMode(mode: ChatMode): void;
  setSystemPrompt(text: string): void;
  setSampling(patch: Partial<Sampling>): void;
  send(text: string): Promise<void>;
  stop(): Promise<void>;
  clear(): void;
  clearError(): void;
  /** The assistant message still generating, if any. */
  running(): ChatMessage | undefined;
}

/** Conversation length kept in memory. */
export const MAX_MESSAGES = 200;

let seq = 0;
const newId = (): string => `m${Date.now().toString(36)}${(seq++).toString(36)}`;

type ChatPush = BridgePush<'chat.delta'> | BridgePush<'chat.done'> | BridgePush<'chat.error'> | BridgePush<'chat.accepted'>;
type Tagged = { channel: 'chat.delta' | 'chat.done' | 'chat.error' | 'chat.accepted'; payload: ChatPush };

export function validateSampling(s: Sampling): string | null {
  if (!(s.temperature >= 0 && s.temperature <= 2)) return 'temperature must be between 0 and 2';
  if (!(s.topP > 0 && s.topP <= 1)) return 'top-p must be in (0, 1]';
  if (!Number.isInteger(s.topK) || s.topK < 0) return 'top-k must be a whole number >= 0 (0 = off)';
  if (!Number.isInteger(s.maxTokens) || s.maxTokens < 1) return 'max tokens must be a whole number >= 1';
  if (s.seed !== null && (!Number.isInteger(s.seed) || s.seed < 0 || s.seed > 0xffffffff)) return 'seed must be a whole number from 0 to 4294967295, or empty';
  return null;
}

export function createChatStore(bridge: RendererBridge, now: () => number = () => performance.now()): StoreApi<ChatState> {
  const early = new Map<string, Tagged[]>();

  const store = createStore<ChatState>()((set, get) => {
    const patch = (id: string, change: (m: ChatMessage) => Partial<ChatMessage>): void =>
      set((s) => ({ messages: s.messages.map((m) => (m.id === id ? { ...m, ...change(m) } : m)) }));

    return {
      mode: 'chat',
      systemPrompt: '',
      sampling: { temperature: 0.7, topP: 1, topK: 0, maxTokens: 128, seed: null },
      messages: [],
      error: null,
      setMode: (mode) => set({ mode }),
      setSystemPrompt: (systemPrompt) => set({ systemPrompt }),
      setSampling: (p) => set((s) => ({ sampling: { ...s.sampling, ...p } })),
      clearError: () => set({ error: null }),
      clear: () => set((s) => ({ messages: s.messages.filter((m) => m.stage === 'queued' || m.stage === 'prefill' || m.stage === 'decode') })),
      running: () => get().messages.find((m) => m.role === 'assistant' && (m.stage === 'queued' || m.stage === 'prefill' || m.stage === 'decode')),

      async send(text) {
        const s = get();
        if (s.running()) {
          set({ error: 'a reply is still being generated: wait for it or press Stop' });
          return;
        }
        if (text.trim() === '') {
          set({ error: s.mode === 'chat' ? 'type a message first' : 'type a prompt first' });
          return;
        }
        const bad = validateSampling(s.sampling);
        if (bad) {
          set({ error: `invalid sampling settings: ${bad}` });
          return;
        }
        const t = now();
        const user: ChatMessage = { id: newId(), role: 'user', content: text, stage: 'done', chatId: null, startedAtMs: t, chunkTimesMs: [], stats: null, error: null, mode: s.mode };
        const reply: ChatMessage = { ...user, id: newId(), role: 'assistant', content: '', stage: 'queued' };
        let request: BridgeRequestInput<'chat.start'>;
        if (s.mode === 'chat') {
          const history = s.messages
            .filter((m) => m.mode === 'chat' && (m.role === 'user' || (m.role === 'assistant' && m.content !== '' && m.stage !== 'error')))
            .map((m) => ({ role: m.role, content: m.content }));
          const system = s.systemPrompt.trim() ? [{ role: 'system' as const, content: s.systemPrompt.trim() }] : [];
          request = { mode: 'chat', messages: [...system, ...history, { role: 'user', content: text }], sampling: s.sampling };
        } else {
          request = { mode: 'completion', prompt: text, sampling: s.sampling };
        }
        set((st) => ({ error: null, messages: [...st.messages, user, reply].slice(-MAX_MESSAGES) }));
        try {
          const { chatId } = await bridge.invoke('chat.start', request);
          patch(reply.id, () => ({ chatId }));
          for (const e of early.get(chatId) ?? []) apply(e);
          early.delete(chatId);
        } catch (e) {
          patch(reply.id, () => ({ stage: 'error', error: (e as Error).message }));
        }
      },

      async stop() {
        const r = get().running();
        if (!r?.chatId) return;
        try {
          await bridge.invoke('chat.stop', { chatId: r.chatId });
        } catch (e) {
          set({ error: (e as Error).message });
        }
      },
    };
  });

  const apply = ({ channel, payload }: Tagged): void => {
    const msg = store.getState().messages.find((m) => m.chatId === payload.chatId);
    if (!msg) {
      const list = early.get(payload.chatId) ?? [];
      if (list.length < 10_000) list.push({ channel, payload });
      early.set(payload.chatId, list);
      if (early.size > 16) early.delete(early.keys().next().value as string);
      return;
    }
    const update = (change: Partial<ChatMessage>): void =>
      store.setState((s) => ({ messages: s.messages.map((m) => (m.id === msg.id ? { ...m, ...change } : m)) }));
    switch (channel) {
      case 'chat.accepted':
        if (msg.stage === 'queued') update({ stage: 'prefill' });
        break;
      case 'chat.delta': {
        const d = payload as BridgePush<'chat.delta'>;
        update({ content: msg.content + d.text, stage: 'decode', chunkTimesMs: [...msg.chunkTimesMs, d.timings.sinceStartMs] });
        break;
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
        update({ stage: d.finishReason === 'aborted' ? 'stopped' : 'done', stats });
        break;
      }
      case 'chat.error':
        update({ stage: 'error', error: (payload as BridgePush<'chat.error'>).message });
        break;
    }
  };
  for (const channel of ['chat.accepted', 'chat.delta', 'chat.done', 'chat.error'] as const) {
    bridge.on(channel, (payload) => apply({ channel, payload }));
  }
  return store;
}
