import { describe, expect, it } from 'vitest';
import { createFakeBridge } from '../testing/fakeBridge.js';
import { persistChats, restoreChats } from './chatPersistence.js';
import { activeConversation, createChatStore } from './chatStore.js';
import { effectiveSettings } from './chatSettings.js';

function setup() {
  const bridge = createFakeBridge();
  let n = 0;
  bridge.handle('chat.start', () => ({ chatId: `c${++n}` }));
  const store = createChatStore(bridge, { now: () => 1000 });
  const finish = (chatId: string) => bridge.emit('chat.done', { chatId, finishReason: 'stop', usage: { promptTokens: 1, completionTokens: 1 }, timings: { ttftMs: 1, totalMs: 2, tokensPerSecond: 1 } });
  const lastStart = () => bridge.calls.filter((c) => c.channel === 'chat.start').at(-1)!.request;
  return { store, finish, lastStart };
}

describe('per-chat system prompt and sampling', () => {
  it('a chat without its own settings uses the defaults', () => {
    const defaults = { systemPrompt: 'be brief', sampling: { temperature: 0.7, topP: 1, topK: 0, maxTokens: 128, seed: null, minP: 0, presencePenalty: 0, frequencyPenalty: 0, repetitionPenalty: 1, stop: [], topLogprobs: null } };
    expect(effectiveSettings({}, defaults)).toBe(defaults);
    const own = { systemPrompt: 'pirate', sampling: { ...defaults.sampling, maxTokens: 7 } };
    expect(effectiveSettings({ own }, defaults)).toBe(own);
  });

  it('own settings start as a copy of the defaults, take the edits, and go to this chat only', async () => {
    const { store, finish, lastStart } = setup();
    store.getState().setSystemPrompt('be brief');
    store.getState().setOwnSettings(true);
    store.getState().setSampling({ maxTokens: 7 });
    store.getState().setSystemPrompt('talk like a pirate');
    expect(store.getState().sampling.maxTokens).toBe(128);
    expect(store.getState().systemPrompt).toBe('be brief');
    expect(activeConversation(store.getState()).own).toEqual({ systemPrompt: 'talk like a pirate', sampling: expect.objectContaining({ maxTokens: 7 }) });
    await store.getState().send('hi');
    expect(lastStart()).toMatchObject({ messages: [{ role: 'system', content: 'talk like a pirate' }, { role: 'user', content: 'hi' }], sampling: { maxTokens: 7 } });
    finish('c1');

    store.getState().newConversation();
    await store.getState().send('hello');
    expect(lastStart()).toMatchObject({ messages: [{ role: 'system', content: 'be brief' }, { role: 'user', content: 'hello' }], sampling: { maxTokens: 128 } });
  });

  it('turning own settings off returns the chat to the defaults; bad own sampling blocks only its chat', async () => {
    const { store, lastStart } = setup();
    store.getState().setOwnSettings(true);
    store.getState().setSampling({ temperature: 5 });
    await store.getState().send('hi');
    expect(store.getState().error).toMatch(/invalid sampling settings: temperature/);
    store.getState().setOwnSettings(false);
    expect(activeConversation(store.getState()).own).toBeUndefined();
    await store.getState().send('hi');
    expect(lastStart()).toMatchObject({ sampling: { temperature: 0.7 } });
  });

  it('own settings survive a reload (a number being typed is kept as the default)', () => {
    const { store } = setup();
    store.getState().setOwnSettings(true);
    store.getState().setSampling({ maxTokens: 9, topK: Number.NaN });
    const kept = JSON.parse(JSON.stringify(persistChats(store.getState()))) as unknown;
    const back = restoreChats(kept, store.getState()).state;
    expect(back.conversations[0]!.own!.sampling).toMatchObject({ maxTokens: 9, topK: 0 });
  });
});
