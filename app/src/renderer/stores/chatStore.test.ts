import { describe, expect, it } from 'vitest';
import { createFakeBridge } from '../testing/fakeBridge.js';
import { activeMessages, createChatStore, MAX_MESSAGES, validateSampling } from './chatStore.js';

const timings = (sinceStartMs: number, sincePrevMs = 10) => ({ sinceStartMs, sincePrevMs });

describe('chatStore', () => {
  it('streams a reply through queued -> prefill -> decode -> done and keeps its stats', async () => {
    const bridge = createFakeBridge();
    bridge.handle('chat.start', () => ({ chatId: 'c1' }));
    const store = createChatStore(bridge, { now: () => 1000 });
    await store.getState().send('hi');
    let reply = activeMessages(store.getState())[1]!;
    expect(reply.stage).toBe('queued');
    expect(bridge.calls[0]!.request).toMatchObject({ mode: 'chat', messages: [{ role: 'user', content: 'hi' }] });
    bridge.emit('chat.accepted', { chatId: 'c1', sinceStartMs: 5 });
    expect(activeMessages(store.getState())[1]!.stage).toBe('prefill');
    bridge.emit('chat.delta', { chatId: 'c1', text: 'Hel', stage: 'prefill', timings: timings(100) });
    bridge.emit('chat.delta', { chatId: 'c1', text: 'lo', stage: 'decode', timings: timings(120) });
    bridge.emit('chat.delta', { chatId: 'c1', text: '!', stage: 'decode', timings: timings(140) });
    reply = activeMessages(store.getState())[1]!;
    expect(reply.content).toBe('Hello!');
    expect(reply.stage).toBe('decode');
    expect(store.getState().running()?.id).toBe(reply.id);
    bridge.emit('chat.done', { chatId: 'c1', finishReason: 'stop', usage: { promptTokens: 4, completionTokens: 3 }, timings: { ttftMs: 99, totalMs: 150, tokensPerSecond: 50 } });
    reply = activeMessages(store.getState())[1]!;
    expect(reply.stage).toBe('done');
    expect(reply.stats).toMatchObject({ ttftMs: 99, numOutputTokens: 3, numPromptTokens: 4, totalMs: 150 });
    expect(reply.stats!.meanItlMs).toBeCloseTo(20);
    expect(reply.stats!.decodeTokensPerSecond).toBeCloseTo(50);
    expect(store.getState().running()).toBeUndefined();
  });

  it('applies pushes that arrive before chat.start answers', async () => {
    const bridge = createFakeBridge();
    bridge.handle('chat.start', () => {
      bridge.emit('chat.delta', { chatId: 'early', text: 'x', stage: 'prefill', timings: timings(5) });
      return { chatId: 'early' };
    });
    const store = createChatStore(bridge);
    await store.getState().send('hi');
    expect(activeMessages(store.getState())[1]!.content).toBe('x');
  });

  it('sends the history (and system prompt) in chat mode, only the prompt in completion mode', async () => {
    const bridge = createFakeBridge();
    let n = 0;
    bridge.handle('chat.start', () => ({ chatId: `c${++n}` }));
    const store = createChatStore(bridge);
    store.getState().setSystemPrompt('be brief');
    await store.getState().send('one');
    bridge.emit('chat.delta', { chatId: 'c1', text: 'A', stage: 'prefill', timings: timings(1) });
    bridge.emit('chat.done', { chatId: 'c1', finishReason: 'stop', usage: { promptTokens: 1, completionTokens: 1 }, timings: { ttftMs: 1, totalMs: 2, tokensPerSecond: 0 } });
    await store.getState().send('two');
    expect(bridge.calls[1]!.request).toMatchObject({
      messages: [
        { role: 'system', content: 'be brief' },
        { role: 'user', content: 'one' },
        { role: 'assistant', content: 'A' },
        { role: 'user', content: 'two' },
      ],
    });
    bridge.emit('chat.error', { chatId: 'c2', message: 'boom' });
    store.getState().setMode('completion');
    await store.getState().send('Once');
    expect(bridge.calls[2]!.request).toMatchObject({ mode: 'completion', prompt: 'Once' });
  });

  it('refuses a second send while one runs, empty text and bad sampling, with messages', async () => {
    const bridge = createFakeBridge();
    bridge.handle('chat.start', () => ({ chatId: 'c1' }));
    const store = createChatStore(bridge);
    await store.getState().send('   ');
    expect(store.getState().error).toMatch(/type a message/);
    store.getState().setSampling({ temperature: 5 });
    await store.getState().send('hi');
    expect(store.getState().error).toMatch(/temperature must be between 0 and 2/);
    store.getState().setSampling({ temperature: 0.5 });
    await store.getState().send('hi');
    await store.getState().send('again');
    expect(store.getState().error).toMatch(/still being generated/);
    expect(bridge.calls).toHaveLength(1);
  });

  it('shows a failed start on the message and marks stops', async () => {
    const bridge = createFakeBridge();
    bridge.handle('chat.start', () => {
      throw new Error('cannot chat: no topology is launched');
    });
    const store = createChatStore(bridge);
    await store.getState().send('hi');
    expect(activeMessages(store.getState())[1]).toMatchObject({ stage: 'error', error: 'cannot chat: no topology is launched' });

    const b2 = createFakeBridge();
    b2.handle('chat.start', () => ({ chatId: 's' }));
    b2.handle('chat.stop', () => ({ stopped: true }));
    const s2 = createChatStore(b2);
    await s2.getState().send('go');
    await s2.getState().stop();
    expect(b2.calls[1]).toEqual({ channel: 'chat.stop', request: { chatId: 's' } });
    b2.emit('chat.done', { chatId: 's', finishReason: 'aborted', usage: { promptTokens: 1, completionTokens: 0 }, timings: { ttftMs: null, totalMs: 5, tokensPerSecond: 0 } });
    expect(activeMessages(s2.getState())[1]!.stage).toBe('stopped');
  });

  it('keeps the conversation bounded', async () => {
    const bridge = createFakeBridge();
    let n = 0;
    bridge.handle('chat.start', () => ({ chatId: `c${++n}` }));
    const store = createChatStore(bridge);
    for (let i = 0; i < MAX_MESSAGES; i++) {
      await store.getState().send(`m${i}`);
      bridge.emit('chat.error', { chatId: `c${n}`, message: 'x' });
    }
    expect(activeMessages(store.getState()).length).toBe(MAX_MESSAGES);
  });

  it('validateSampling names the bad field', () => {
    const ok = { temperature: 0.7, topP: 1, topK: 0, maxTokens: 16, seed: null, minP: 0, presencePenalty: 0, frequencyPenalty: 0, repetitionPenalty: 1, stop: [], topLogprobs: null };
    expect(validateSampling(ok)).toBeNull();
    expect(validateSampling({ ...ok, topP: 0 })).toMatch(/top-p/);
    expect(validateSampling({ ...ok, maxTokens: 0 })).toMatch(/max tokens/);
    expect(validateSampling({ ...ok, seed: -1 })).toMatch(/seed/);
    expect(validateSampling({ ...ok, topK: 1.5 })).toMatch(/top-k/);
  });
});
