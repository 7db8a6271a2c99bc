import { describe, expect, it } from 'vitest';
import { createFakeBridge } from '../testing/fakeBridge.js';
import { activeMessages, createChatStore } from './chatStore.js';
import { canContinue, continueRequest } from './continueReply.js';
import { replyTo, userMessage, type ChatMessage } from './conversations.js';
import { defaultSampling } from './chatPersistence.js';

function cut(prompt: string, reply: string, mode: 'chat' | 'completion' = 'completion', finishReason: ChatMessage['finishReason'] = 'length'): ChatMessage[] {
  const ask = userMessage(prompt, mode, 1);
  return [ask, { ...replyTo(ask, 2), content: reply, stage: 'done', ...(finishReason ? { finishReason } : {}) }];
}

describe('continue a reply cut by max tokens', () => {
  it('is offered only on a finished raw-completion reply that ended at length', () => {
    expect(canContinue(cut('Once', ' upon')[1]!)).toBe(true);
    expect(canContinue(cut('Once', ' upon', 'completion', 'stop')[1]!)).toBe(false);
    expect(canContinue(cut('Once', ' upon', 'chat')[1]!)).toBe(false);
    expect(canContinue({ ...cut('Once', ' upon')[1]!, stage: 'stopped' })).toBe(false);
    expect(canContinue(cut('Once', ' upon')[0]!)).toBe(false);
  });

  it('sends the prompt plus the reply so far as a raw completion', () => {
    const messages = cut('Once upon', ' a time there');
    expect(continueRequest(messages, messages[1]!.id, defaultSampling)).toEqual({ mode: 'completion', prompt: 'Once upon a time there', sampling: defaultSampling });
  });

  it('says why when it cannot', () => {
    const messages = cut('Once', ' upon', 'completion', 'stop');
    expect(continueRequest(messages, 'gone', defaultSampling)).toMatch(/no longer/);
    expect(continueRequest(messages, messages[1]!.id, defaultSampling)).toMatch(/only a raw-completion reply cut by max tokens/);
    const orphan = cut('Once', ' upon')[1]!;
    expect(continueRequest([orphan], orphan.id, defaultSampling)).toMatch(/the prompt this reply completes is no longer/);
  });

  it('the store appends the continuation to the reply and keeps its new finish reason', async () => {
    const bridge = createFakeBridge();
    let n = 0;
    bridge.handle('chat.start', () => ({ chatId: `c${++n}` }));
    const store = createChatStore(bridge, { now: () => 1000 });
    store.getState().setMode('completion');
    await store.getState().send('Once upon');
    const done = (chatId: string, finishReason: 'length' | 'stop') =>
      bridge.emit('chat.done', { chatId, finishReason, usage: { promptTokens: 2, completionTokens: 3 }, timings: { ttftMs: 5, totalMs: 10, tokensPerSecond: 10 } });
    bridge.emit('chat.delta', { chatId: 'c1', text: ' a time', stage: 'decode', timings: { sinceStartMs: 5, sincePrevMs: 5 } });
    done('c1', 'length');
    const replyId = activeMessages(store.getState())[1]!.id;
    await store.getState().continueReply(replyId);
    expect(bridge.calls.filter((c) => c.channel === 'chat.start').at(-1)!.request).toMatchObject({ mode: 'completion', prompt: 'Once upon a time' });
    expect(activeMessages(store.getState())[1]).toMatchObject({ stage: 'queued', content: ' a time', chatId: 'c2' });
    expect(activeMessages(store.getState())[1]!.finishReason).toBeUndefined();
    bridge.emit('chat.delta', { chatId: 'c2', text: ' there was', stage: 'decode', timings: { sinceStartMs: 5, sincePrevMs: 5 } });
    done('c2', 'stop');
    const reply = activeMessages(store.getState())[1]!;
    expect(reply).toMatchObject({ id: replyId, content: ' a time there was', stage: 'done', finishReason: 'stop' });
    expect(activeMessages(store.getState())).toHaveLength(2);
    await store.getState().continueReply(replyId);
    expect(store.getState().error).toMatch(/^cannot continue: only a raw-completion reply/);
  });
});
