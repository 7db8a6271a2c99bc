/**
 * Playground: several conversations (new, rename, delete), each message with its
 * streaming state, stats and tool calls, the sampling, response format and tools
 * settings, the system prompt, the chat/completion mode and whether the settings panel is
 * open, kept in browser storage (see chatPersistence). Replies stream from bridge pushes,
 * which can arrive before chat.start's answer: they wait in a small buffer. One reply runs at a time, in
 * whichever conversation. A reply that calls tools waits for the user's results; the
 * last one sent continues the chat.
 */
import { createStore, type StoreApi } from 'zustand/vanilla';
import { persist } from 'zustand/middleware';
import type { BridgePush, ChatStart } from '@afd/shared';
import type { RendererBridge } from '../bridge/types.js';
import { debouncedStorage, STORAGE_PREFIX, type KeyValueStorage } from '../lib/persist.js';
import { defaultSampling, persistChats, restoreChats, type PersistedChats } from './chatPersistence.js';
import {
  historyBefore,
  historyEdited,
  isLive,
  MAX_CONVERSATIONS,
  MAX_MESSAGES,
  newConversation,
  replyRequest,
  replyTo,
  titleFrom,
  toolResultMessage,
  userMessage,
  validateSampling,
  type ChatMessage,
  type ChatMode,
  type Conversation,
  type Sampling,
} from './conversations.js';
import { pushChange, type TaggedChatPush } from './chatPushes.js';
import { effectiveSettings } from './chatSettings.js';
import { importChats } from './chatTransfer.js';
import { continueRequest } from './continueReply.js';
import { chatRequestFields } from './requestFields.js';
import { defaultResponseFormat, type ResponseFormatSettings } from './responseFormat.js';
import { defaultToolSettings, type ToolSettings } from './toolSettings.js';
import { pendingToolCalls } from './toolTurns.js';

export type { ChatMessage, ChatMode, Conversation, FinishReason, MessageStage, Sampling } from './conversations.js';
export { MAX_MESSAGES, validateSampling } from './conversations.js';

export interface ChatState extends PersistedChats {
  /** A send failure (no topology, invalid settings). */
  error: string | null;
  /** Why the chats could not be saved (storage full); null when they are. */
  storageError: string | null;
  /** The model id the API named in the last accepted request (for the request shown as code); null until one. */
  servedModelId: string | null;
  /** Only the user changes the mode (the mode radio); nothing else calls this. */
  setMode(mode: ChatMode): void;
  setSidePanelOpen(open: boolean): void;
  /** Sets the system prompt the chat on screen uses: its own, or the defaults when it has none. */
  setSystemPrompt(text: string): void;
  /** Changes the sampling the chat on screen uses: its own, or the defaults when it has none. */
  setSampling(patch: Partial<Sampling>): void;
  /** Gives the chat on screen its own system prompt and sampling (a copy of the defaults), or takes them away (it uses the defaults again). */
  setOwnSettings(on: boolean): void;
  setResponseFormat(patch: Partial<ResponseFormatSettings>): void;
  setTools(patch: Partial<ToolSettings>): void;
  newConversation(): void;
  selectConversation(id: string): void;
  renameConversation(id: string, title: string): void;
  deleteConversation(id: string): Promise<void>;
  /**
   * Adds the chats of an exported file (see chatTransfer) before the others and opens the
   * first; false, with the error set, when the file is refused (nothing is added then).
   */
  importConversations(fileText: string): boolean;
  send(text: string): Promise<void>;
  /** Answers the user message before assistant message `id` again (what follows is dropped). */
  regenerate(id: string): Promise<void>;
  /** Replaces user message `id` with `text` and resends it (what follows is dropped). */
  editAndResend(id: string, text: string): Promise<void>;
  /**
   * Adds the user's result of tool call `callId` of reply `assistantId`; the result of the
   * reply's last unanswered call also starts the next reply. False (with the error set)
   * when the call cannot take a result now, or the next reply cannot start.
   */
  answerToolCall(assistantId: string, callId: string, text: string): Promise<boolean>;
  /** Asks for more of reply `id`, cut by max tokens (see continueReply); the text (and its tokens) is appended to it. */
  continueReply(id: string): Promise<void>;
  stop(): Promise<void>;
  /** Empties the active conversation (a running reply stays). */
  clear(): void;
  clearError(): void;
  /** The assistant message still generating, if any, in any conversation. */
  running(): ChatMessage | undefined;
}

/** The conversation on screen. */
export const activeConversation = (s: Pick<ChatState, 'conversations' | 'activeId'>): Conversation => s.conversations.find((c) => c.id === s.activeId) ?? s.conversations[0]!;
/** Messages of the conversation on screen. */
export const activeMessages = (s: Pick<ChatState, 'conversations' | 'activeId'>): ChatMessage[] => activeConversation(s).messages;

export interface ChatStoreOptions {
  /** Wall clock, epoch ms. */
  now?: () => number;
  /** Where chats are kept (default: none, i.e. memory only). */
  storage?: KeyValueStorage | null;
  /** Debounce of storage writes, ms. */
  saveDelayMs?: number;
}


/** Storage key of the chats. */
export const CHATS_KEY = `${STORAGE_PREFIX}chats.v1`;

export function createChatStore(bridge: RendererBridge, opts: ChatStoreOptions = {}): StoreApi<ChatState> {
  const now = opts.now ?? (() => Date.now());
  const early = new Map<string, TaggedChatPush[]>();
  let reportStorageError = (_m: string): void => undefined;
  const storage = opts.storage
    ? debouncedStorage<PersistedChats>(opts.storage, { ...(opts.saveDelayMs !== undefined ? { delayMs: opts.saveDelayMs } : {}), prepare: persistChats, onError: (m) => reportStorageError(m) })
    : null;
  let interrupted: string[] = [];
  const first = newConversation(now());

  const creator = (set: StoreApi<ChatState>['setState'], get: StoreApi<ChatState>['getState']): ChatState => {
    const patchConversation = (id: string, change: (c: Conversation) => Partial<Conversation>): void =>
      set((s) => ({ conversations: s.conversations.map((c) => (c.id === id ? { ...c, ...change(c) } : c)) }));
    const patchMessage = (msgId: string, change: Partial<ChatMessage>): void =>
      set((s) => ({ conversations: s.conversations.map((c) => (c.messages.some((m) => m.id === msgId) ? { ...c, messages: c.messages.map((m) => (m.id === msgId ? { ...m, ...change } : m)) } : c)) }));

    /** The system prompt and sampling chat `conversationId` sends with. */
    const settingsOf = (conversationId: string): { systemPrompt: string; sampling: Sampling } => {
      const s = get();
      return effectiveSettings(s.conversations.find((c) => c.id === conversationId) ?? {}, s);
    };

    /** Checks that a reply in `mode` (sending the response-format and tool fields unless `continuing`) may start now in chat `conversationId`; sets the error and returns false otherwise. */
    const mayReply = (mode: ChatMode, conversationId: string, continuing = false): boolean => {
      const s = get();
      if (s.running()) {
        set({ error: 'a reply is still being generated: wait for it or press Stop' });
        return false;
      }
      const bad = validateSampling(settingsOf(conversationId).sampling);
      if (bad) {
        set({ error: `invalid sampling settings: ${bad}` });
        return false;
      }
      const fields = chatRequestFields(s.responseFormat, s.tools);
      if (mode === 'chat' && !continuing && !fields.ok) {
        set({ error: `invalid ${fields.error}` });
        return false;
      }
      return true;
    };

    /** Replaces the conversation's messages with `history` plus a new reply, and asks the service for it (after mayReply). */
    const startReply = async (conversationId: string, history: ChatMessage[]): Promise<void> => {
      const s = get();
      const reply = replyTo(history.at(-1)!, now());
      const fields = chatRequestFields(s.responseFormat, s.tools);
      const { systemPrompt, sampling } = settingsOf(conversationId);
      const request = replyRequest(history, systemPrompt, sampling, fields.ok ? fields.value : {});
      patchConversation(conversationId, (c) => ({
        messages: [...history, reply].slice(-MAX_MESSAGES),
        updatedAtMs: now(),
        title: c.renamed || c.messages.length > 0 ? c.title : titleFrom(history[0]?.content ?? ''),
      }));
      set({ error: null });
      await streamInto(reply.id, request);
    };

    /** Starts `request` in the service; its pushes stream into assistant message `replyId`. */
    const streamInto = async (replyId: string, request: ChatStart): Promise<void> => {
      try {
        const { chatId } = await bridge.invoke('chat.start', request);
        patchMessage(replyId, { chatId });
        for (const e of early.get(chatId) ?? []) apply(e);
        early.delete(chatId);
      } catch (e) {
        patchMessage(replyId, { stage: 'error', error: (e as Error).message });
      }
    };

    return {
      mode: 'chat',
      systemPrompt: '',
      sampling: { ...defaultSampling },
      conversations: [first],
      activeId: first.id,
      responseFormat: { ...defaultResponseFormat },
      tools: { ...defaultToolSettings },
      error: null,
      storageError: null,
      servedModelId: null,
      sidePanelOpen: null,
      setMode: (mode) => set({ mode }),
      setSidePanelOpen: (sidePanelOpen) => set({ sidePanelOpen }),
      setSystemPrompt(systemPrompt) {
        const c = activeConversation(get());
        if (c.own) patchConversation(c.id, (x) => ({ own: { ...x.own!, systemPrompt } }));
        else set({ systemPrompt });
      },
      setSampling(p) {
        const c = activeConversation(get());
        if (c.own) patchConversation(c.id, (x) => ({ own: { ...x.own!, sampling: { ...x.own!.sampling, ...p } } }));
        else set((s) => ({ sampling: { ...s.sampling, ...p } }));
      },
      setOwnSettings(on) {
        const s = get();
        const c = activeConversation(s);
        if (on === (c.own !== undefined)) return;
        patchConversation(c.id, () => ({ own: on ? { systemPrompt: s.systemPrompt, sampling: { ...s.sampling } } : undefined }));
      },
      setResponseFormat: (p) => set((s) => ({ responseFormat: { ...s.responseFormat, ...p } })),
      setTools: (p) => set((s) => ({ tools: { ...s.tools, ...p } })),
      clearError: () => set({ error: null }),
      running: () => get().conversations.flatMap((c) => c.messages).find((m) => m.role === 'assistant' && isLive(m)),

      newConversation() {
        const current = activeConversation(get());
        if (current.messages.length === 0) return; // already on an empty one
        const c = newConversation(now());
        set((s) => {
          let list = [c, ...s.conversations];
          if (list.length > MAX_CONVERSATIONS) {
            const keep = new Set([...list].sort((a, b) => b.updatedAtMs - a.updatedAtMs).slice(0, MAX_CONVERSATIONS).map((x) => x.id));
            list = list.filter((x) => keep.has(x.id) || x.id === c.id);
          }
          return { conversations: list, activeId: c.id, error: null };
        });
      },
      selectConversation(id) {
        if (get().conversations.some((c) => c.id === id)) set({ activeId: id, error: null });
      },
      renameConversation(id, title) {
        const t = title.trim();
        if (t === '') {
          set({ error: 'a chat needs a name: type one, or press Esc to keep the old one' });
          return;
        }
        patchConversation(id, () => ({ title: t.slice(0, 120), renamed: true }));
      },
      async deleteConversation(id) {
        const c = get().conversations.find((x) => x.id === id);
        if (!c) return;
        const live = c.messages.find((m) => m.role === 'assistant' && isLive(m));
        if (live?.chatId) await bridge.invoke('chat.stop', { chatId: live.chatId }).catch(() => undefined);
        set((s) => {
          const rest = s.conversations.filter((x) => x.id !== id);
          const list = rest.length > 0 ? rest : [newConversation(now())];
          return { conversations: list, activeId: s.activeId === id ? list[0]!.id : s.activeId };
        });
      },
      importConversations(fileText) {
        const r = importChats(fileText, get().conversations);
        if (!r.ok) {
          set({ error: r.error });
          return false;
        }
        set((s) => {
          const current = activeConversation(s);
          // An empty chat on screen makes way for the imported ones.
          const rest = current.messages.length === 0 ? s.conversations.filter((c) => c.id !== current.id) : s.conversations;
          const keep = [...rest].sort((a, b) => b.updatedAtMs - a.updatedAtMs).slice(0, Math.max(0, MAX_CONVERSATIONS - r.conversations.length));
          return { conversations: [...r.conversations, ...keep], activeId: r.conversations[0]!.id, error: null };
        });
        return true;
      },
      clear: () => patchConversation(get().activeId, (c) => ({ messages: c.messages.filter((m) => isLive(m)) })),

      async send(text) {
        const s = get();
        if (text.trim() === '') {
          set({ error: s.mode === 'chat' ? 'type a message first' : 'type a prompt first' });
          return;
        }
        const c = activeConversation(s);
        if (!mayReply(s.mode, c.id)) return;
        await startReply(c.id, [...c.messages, userMessage(text, s.mode, now())]);
      },

      async regenerate(id) {
        const c = get().conversations.find((x) => x.messages.some((m) => m.id === id));
        const history = c ? historyBefore(c.messages, id) : 'that reply is no longer here';
        if (typeof history === 'string') return void set({ error: `cannot regenerate: ${history}` });
        if (mayReply(history.at(-1)!.mode, c!.id)) await startReply(c!.id, history);
      },

      async editAndResend(id, text) {
        if (text.trim() === '') return void set({ error: 'the edited message is empty: type something, or press Esc to keep it' });
        const c = get().conversations.find((x) => x.messages.some((m) => m.id === id));
        const history = c ? historyEdited(c.messages, id, text) : 'that message is no longer here';
        if (typeof history === 'string') return void set({ error: `cannot resend: ${history}` });
        if (mayReply(history.at(-1)!.mode, c!.id)) await startReply(c!.id, history);
      },

      async answerToolCall(assistantId, callId, text) {
        if (text.trim() === '') {
          set({ error: "type the tool's result first (any text, e.g. JSON)" });
          return false;
        }
        const c = get().conversations.find((x) => x.messages.some((m) => m.id === assistantId));
        const pending = c ? pendingToolCalls(c.messages) : null;
        const call = pending?.assistantId === assistantId ? pending.unanswered.find((x) => x.id === callId) : undefined;
        if (!c || !pending || !call) {
          set({ error: 'that tool call cannot take a result now: it was answered already, or the chat went on after it' });
          return false;
        }
        const history = [...c.messages, toolResultMessage(call, text, now())];
        if (pending.unanswered.length > 1) {
          patchConversation(c.id, () => ({ messages: history.slice(-MAX_MESSAGES), updatedAtMs: now() }));
          set({ error: null });
          return true;
        }
        if (!mayReply('chat', c.id)) return false;
        await startReply(c.id, history);
        return true;
      },

      async continueReply(id) {
        const c = get().conversations.find((x) => x.messages.some((m) => m.id === id));
        const request = c ? continueRequest(c.messages, id, settingsOf(c.id)) : 'that reply is no longer here';
        if (typeof request === 'string') return void set({ error: `cannot continue: ${request}` });
        if (!mayReply(request.mode, c!.id, true)) return;
        // The reply streams again: its text so far stays, the new text is appended, the stats are the continuation's.
        patchConversation(c!.id, (x) => ({
          updatedAtMs: now(),
          messages: x.messages.map((m) => (m.id === id ? { ...m, stage: 'queued' as const, chatId: null, startedAtMs: now(), chunkTimesMs: [], stats: null, error: null, finishReason: undefined } : m)),
        }));
        set({ error: null });
        await streamInto(id, request);
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
  };

  const store = storage
    ? createStore<ChatState>()(
        persist(creator, {
          name: CHATS_KEY,
          storage,
          partialize: (s): PersistedChats => ({
            mode: s.mode,
            systemPrompt: s.systemPrompt,
            sampling: s.sampling,
            responseFormat: s.responseFormat,
            tools: s.tools,
            conversations: s.conversations,
            activeId: s.activeId,
            sidePanelOpen: s.sidePanelOpen,
          }),
          merge: (stored, current) => {
            const r = restoreChats(stored, current);
            interrupted = r.interrupted;
            return { ...current, ...r.state };
          },
        }),
      )
    : createStore<ChatState>()(creator);
  reportStorageError = (m) => store.setState({ storageError: m });
  // Replies the page was reloaded under may still run in the service: stop them.
  for (const chatId of interrupted) void bridge.invoke('chat.stop', { chatId }).catch(() => undefined);

  const apply = ({ channel, payload }: TaggedChatPush): void => {
    const msg = store
      .getState()
      .conversations.flatMap((c) => c.messages)
      .find((m) => m.chatId === payload.chatId);
    if (!msg) {
      const list = early.get(payload.chatId) ?? [];
      if (list.length < 10_000) list.push({ channel, payload });
      early.set(payload.chatId, list);
      if (early.size > 16) early.delete(early.keys().next().value as string);
      return;
    }
    if (!isLive(msg)) return; // finished, or stopped by a reload: late pushes change nothing
    if (channel === 'chat.accepted') {
      const model = (payload as BridgePush<'chat.accepted'>).model;
      if (model !== undefined) store.setState({ servedModelId: model });
    }
    const change = pushChange(msg, { channel, payload });
    if (change)
      store.setState((s) => ({ conversations: s.conversations.map((c) => (c.messages.some((m) => m.id === msg.id) ? { ...c, messages: c.messages.map((m) => (m.id === msg.id ? { ...m, ...change } : m)) } : c)) }));
  };
  for (const channel of ['chat.accepted', 'chat.delta', 'chat.done', 'chat.error'] as const) {
    bridge.on(channel, (payload) => apply({ channel, payload }));
  }
  return store;
}
