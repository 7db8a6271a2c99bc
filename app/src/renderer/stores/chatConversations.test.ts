/** The chat store's conversations (new, rename, delete, regenerate, edit-resend) and what survives a reload. */
import { describe, expect, it } from 'vitest';
import { memoryStorage } from '../lib/persist.js';
import { createFakeBridge, type FakeBridge } from '../testing/fakeBridge.js';
import { INTERRUPTED } from './chatPersistence.js';
import { activeConversation, activeMessages, CHATS_KEY, createChatStore } from './chatStore.js';

const timings = { sinceStartMs: 10, sincePrevMs: 10 };
const done = (chatId: string, finishReason: 'stop' | 'aborted' = 'stop') =>
  ({ chatId, finishReason, usage: { promptTokens: 3, completionTokens: 2 }, timings: { ttftMs: 5, totalMs: 20, tokensPerSecond: 10 } }) as const;

function bridgeWithChats(): FakeBridge {
  const bridge = createFakeBridge();
  let n = 0;
  bridge.handle('chat.start', () => ({ chatId: `c${++n}` }));
  bridge.handle('chat.stop', () => ({ stopped: true }));
  return bridge;
}

async function reply(bridge: FakeBridge, chatId: string, text: string): Promise<void> {
  bridge.emit('chat.delta', { chatId, text, stage: 'prefill', timings });
  bridge.emit('chat.done', done(chatId));
}

/** A chat store after two turns: `first` answered 'A' (chat c1), then `second` answered 'B' (c2). */
async function afterTwoTurns(first: string, second: string) {
  const bridge = bridgeWithChats();
  const store = createChatStore(bridge);
  await store.getState().send(first);
  await reply(bridge, 'c1', 'A');
  await store.getState().send(second);
  await reply(bridge, 'c2', 'B');
  return { bridge, store };
}

describe('conversations', () => {
  it('creates, titles, renames, switches and deletes chats', async () => {
    const bridge = bridgeWithChats();
    const store = createChatStore(bridge);
    const first = store.getState().activeId;
    await store.getState().send('What is AFD?\nmore text');
    await reply(bridge, 'c1', 'Attention-FFN disaggregation.');
    expect(activeConversation(store.getState()).title).toBe('What is AFD?');
    store.getState().newConversation();
    const second = store.getState().activeId;
    expect(second).not.toBe(first);
    expect(activeMessages(store.getState())).toEqual([]);
    store.getState().newConversation(); // already on an empty chat: no third one
    expect(store.getState().conversations).toHaveLength(2);
    store.getState().renameConversation(first, '  AFD basics ');
    store.getState().renameConversation(first, '   ');
    expect(store.getState().error).toMatch(/needs a name/);
    store.getState().selectConversation(first);
    expect(activeConversation(store.getState())).toMatchObject({ title: 'AFD basics', renamed: true });
    await store.getState().send('And DBO?');
    await reply(bridge, 'c2', 'Dual-batch overlap.');
    expect(activeConversation(store.getState()).title).toBe('AFD basics');
    await store.getState().deleteConversation(first);
    expect(store.getState().activeId).toBe(second);
    await store.getState().deleteConversation(second);
    expect(store.getState().conversations).toHaveLength(1);
    expect(activeMessages(store.getState())).toEqual([]);
  });

  it('deleting a chat whose reply runs stops that reply', async () => {
    const bridge = bridgeWithChats();
    const store = createChatStore(bridge);
    await store.getState().send('long story');
    await store.getState().deleteConversation(store.getState().activeId);
    expect(bridge.calls.at(-1)).toEqual({ channel: 'chat.stop', request: { chatId: 'c1' } });
    expect(store.getState().running()).toBeUndefined();
  });

  it('regenerates a reply from the history before it, dropping what followed', async () => {
    const { bridge, store } = await afterTwoTurns('one', 'two');
    const firstReply = activeMessages(store.getState())[1]!;
    await store.getState().regenerate(firstReply.id);
    expect(bridge.calls.at(-1)!.request).toMatchObject({ mode: 'chat', messages: [{ role: 'user', content: 'one' }] });
    const msgs = activeMessages(store.getState());
    expect(msgs.map((m) => `${m.role}:${m.content}:${m.stage}`)).toEqual(['user:one:done', 'assistant::queued']);
  });

  it('edits a user message and resends it', async () => {
    const { bridge, store } = await afterTwoTurns('one', 'tow');
    const typo = activeMessages(store.getState())[2]!;
    await store.getState().editAndResend(typo.id, '   ');
    expect(store.getState().error).toMatch(/edited message is empty/);
    await store.getState().editAndResend(typo.id, 'two');
    expect(bridge.calls.at(-1)!.request).toMatchObject({
      messages: [
        { role: 'user', content: 'one' },
        { role: 'assistant', content: 'A' },
        { role: 'user', content: 'two' },
      ],
    });
    expect(activeMessages(store.getState()).map((m) => m.content)).toEqual(['one', 'A', 'two', '']);
  });

  it('ignores pushes for a reply that already ended', async () => {
    const bridge = bridgeWithChats();
    const store = createChatStore(bridge);
    await store.getState().send('go');
    bridge.emit('chat.done', done('c1', 'aborted'));
    bridge.emit('chat.delta', { chatId: 'c1', text: 'late', stage: 'decode', timings });
    expect(activeMessages(store.getState())[1]).toMatchObject({ stage: 'stopped', content: '' });
  });
});

describe('chats in browser storage', () => {
  it('a reload brings back every chat, the active one, the mode, the system prompt and the sampling', async () => {
    const storage = memoryStorage();
    const bridge = bridgeWithChats();
    const a = createChatStore(bridge, { storage, saveDelayMs: 0 });
    await a.getState().send('first chat');
    await reply(bridge, 'c1', '**bold** reply');
    a.getState().newConversation();
    await a.getState().send('second chat');
    await reply(bridge, 'c2', 'ok');
    a.getState().setSystemPrompt('Answer in French.');
    a.getState().setSampling({ temperature: 0.2, maxTokens: 64, seed: 7 });
    a.getState().setMode('completion');
    a.getState().setSidePanelOpen(false);
    await new Promise((r) => setTimeout(r, 5));
    expect(storage.data.has(CHATS_KEY)).toBe(true);
    expect(storage.data.get(CHATS_KEY)).not.toContain('chunkTimesMs":[1'); // arrival times are not kept

    const b = createChatStore(createFakeBridge(), { storage });
    const s = b.getState();
    expect(s.conversations.map((c) => c.title)).toEqual(['second chat', 'first chat']);
    expect(activeConversation(s).title).toBe('second chat');
    expect(s.conversations[1]!.messages.map((m) => m.content)).toEqual(['first chat', '**bold** reply']);
    expect(s.conversations[1]!.messages[1]!.stats).toMatchObject({ ttftMs: 5, numOutputTokens: 2, numPromptTokens: 3 });
    expect(s).toMatchObject({ mode: 'completion', systemPrompt: 'Answer in French.', sampling: { temperature: 0.2, maxTokens: 64, seed: 7, topP: 1, topK: 0 }, sidePanelOpen: false });
  });

  it('a reply streaming when the page went away comes back stopped, and is stopped in the service', async () => {
    const storage = memoryStorage();
    const bridge = bridgeWithChats();
    const a = createChatStore(bridge, { storage, saveDelayMs: 0 });
    await a.getState().send('tell me a story');
    bridge.emit('chat.delta', { chatId: 'c1', text: 'Once', stage: 'prefill', timings });
    await new Promise((r) => setTimeout(r, 5));
    const b2 = bridgeWithChats();
    const b = createChatStore(b2, { storage });
    expect(activeMessages(b.getState())[1]).toMatchObject({ content: 'Once', stage: 'stopped', error: INTERRUPTED });
    expect(b.getState().running()).toBeUndefined();
    expect(b2.calls).toEqual([{ channel: 'chat.stop', request: { chatId: 'c1' } }]);
  });

  it('survives damaged storage: bad fields fall back, bad chats are dropped, garbage is ignored', () => {
    const storage = memoryStorage();
    const good = { id: 'k1', title: 'kept', renamed: false, createdAtMs: 1, updatedAtMs: 2, messages: [{ id: 'm1', role: 'user', content: 'hi', stage: 'done', chatId: null, startedAtMs: 1, stats: null, error: null, mode: 'chat' }, { id: 'bad' }] };
    const state = { mode: 'sideways', systemPrompt: 'sys', sampling: { temperature: null, topP: 0.9, topK: -3, maxTokens: 32, seed: null }, conversations: [good, { id: 7 }], activeId: 'gone', sidePanelOpen: 'yes' };
    storage.setItem(CHATS_KEY, JSON.stringify({ state, version: 0 }));
    const s = createChatStore(createFakeBridge(), { storage }).getState();
    expect(s).toMatchObject({ mode: 'chat', systemPrompt: 'sys', sampling: { temperature: 0.7, topP: 0.9, topK: 0, maxTokens: 32 }, sidePanelOpen: null });
    expect(s.conversations.map((c) => c.id)).toEqual(['k1']);
    expect(s.conversations[0]!.messages.map((m) => m.id)).toEqual(['m1']);
    expect(s.activeId).toBe('k1');
    storage.setItem(CHATS_KEY, '{not json');
    expect(createChatStore(createFakeBridge(), { storage }).getState().conversations).toHaveLength(1);
  });

  it('says so when the storage is full, and keeps working', async () => {
    const storage = memoryStorage();
    storage.setItem = () => {
      throw Object.assign(new Error('exceeded the quota'), { name: 'QuotaExceededError' });
    };
    const bridge = bridgeWithChats();
    const store = createChatStore(bridge, { storage, saveDelayMs: 0 });
    await store.getState().send('hi');
    await new Promise((r) => setTimeout(r, 5));
    expect(store.getState().storageError).toMatch(/could not save chats\.v1: the browser storage for this page is full/);
    expect(activeMessages(store.getState())).toHaveLength(2);
  });
});
