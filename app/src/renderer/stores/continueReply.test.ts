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
  it('is offered only on a finished reply that ended at length (a chat reply: with text, without tool calls)', () => {
    expect(canContinue(cut('Once', ' upon')[1]!)).toBe(true);
    expect(canContinue(cut('Once', ' upon', 'completion', 'stop')[1]!)).toBe(false);
    expect(canContinue(cut('Once', ' upon', 'chat')[1]!)).toBe(true);
    expect(canContinue(cut('Once', ' upon', 'chat', 'stop')[1]!)).toBe(false);
    expect(canContinue(cut('Once', '', 'chat')[1]!)).toBe(false);
    expect(canContinue({ ...cut('Once', ' upon', 'chat')[1]!, toolCalls: [{ index: 0, id: 'call_1', name: 'f', arguments: '{' }] })).toBe(false);
    expect(canContinue({ ...cut('Once', ' upon')[1]!, stage: 'stopped' })).toBe(false);
    expect(canContinue(cut('Once', ' upon')[0]!)).toBe(false);
  });

  it('sends the prompt plus the reply so far as a raw completion', () => {
    const messages = cut('Once upon', ' a time there');
    expect(continueRequest(messages, messages[1]!.id, { systemPrompt: '', sampling: defaultSampling })).toEqual({ mode: 'completion', prompt: 'Once upon a time there', sampling: defaultSampling });
  });

  it('a chat reply goes back as the final assistant message with continue_final_message and no generation prompt', () => {
    const messages = cut('Tell me a story', 'Once upon a', 'chat');
    expect(continueRequest(messages, messages[1]!.id, { systemPrompt: ' Be brief. ', sampling: defaultSampling })).toEqual({
      mode: 'chat',
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'Tell me a story' },
        { role: 'assistant', content: 'Once upon a' },
      ],
      sampling: defaultSampling,
      continue_final_message: true,
      add_generation_prompt: false,
    });
    // An earlier cut reply: the conversation is sent only up to it.
    const later = [...messages, ...cut('And then?', 'Then', 'chat', 'stop')];
    const r = continueRequest(later, messages[1]!.id, { systemPrompt: '', sampling: defaultSampling });
    expect(typeof r !== 'string' && r.mode === 'chat' ? r.messages : r).toEqual([
      { role: 'user', content: 'Tell me a story' },
      { role: 'assistant', content: 'Once upon a' },
    ]);
  });

  it('says why when it cannot', () => {
    const messages = cut('Once', ' upon', 'completion', 'stop');
    expect(continueRequest(messages, 'gone', { systemPrompt: '', sampling: defaultSampling })).toMatch(/no longer/);
    expect(continueRequest(messages, messages[1]!.id, { systemPrompt: '', sampling: defaultSampling })).toMatch(/only a reply cut by max tokens \(text, no tool calls\)/);
    const orphan = cut('Once', ' upon')[1]!;
    expect(continueRequest([orphan], orphan.id, { systemPrompt: '', sampling: defaultSampling })).toMatch(/the prompt this reply completes is no longer/);
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
    expect(store.getState().error).toMatch(/^cannot continue: only a reply cut by max tokens/);
  });

  it('the store continues a chat reply: the request carries continue_final_message, the new text and tokens are appended', async () => {
    const bridge = createFakeBridge();
    let n = 0;
    bridge.handle('chat.start', () => ({ chatId: `c${++n}` }));
    const store = createChatStore(bridge, { now: () => 1000 });
    store.getState().setSampling({ topLogprobs: 5 });
    await store.getState().send('Tell me a story');
    const tok = (token: string) => ({ token, logprob: -0.5, top: [{ token, logprob: -0.5 }] });
    bridge.emit('chat.delta', { chatId: 'c1', text: 'Once upon', tokens: [tok('Once'), tok(' upon')], stage: 'decode', timings: { sinceStartMs: 5, sincePrevMs: 5 } });
    bridge.emit('chat.done', { chatId: 'c1', finishReason: 'length', usage: { promptTokens: 5, completionTokens: 2 }, timings: { ttftMs: 5, totalMs: 10, tokensPerSecond: 10 } });
    const replyId = activeMessages(store.getState())[1]!.id;
    await store.getState().continueReply(replyId);
    expect(bridge.calls.filter((c) => c.channel === 'chat.start').at(-1)!.request).toMatchObject({
      mode: 'chat',
      messages: [{ role: 'user', content: 'Tell me a story' }, { role: 'assistant', content: 'Once upon' }],
      continue_final_message: true,
      add_generation_prompt: false,
      sampling: { topLogprobs: 5 },
    });
    bridge.emit('chat.delta', { chatId: 'c2', text: ' a time', tokens: [tok(' a'), tok(' time')], stage: 'decode', timings: { sinceStartMs: 5, sincePrevMs: 5 } });
    bridge.emit('chat.done', { chatId: 'c2', finishReason: 'length', usage: { promptTokens: 7, completionTokens: 2 }, timings: { ttftMs: 5, totalMs: 10, tokensPerSecond: 10 } });
    const reply = activeMessages(store.getState())[1]!;
    expect(reply).toMatchObject({ id: replyId, content: 'Once upon a time', stage: 'done', finishReason: 'length' });
    // A half-typed JSON schema does not block a continuation, which sends no response format.
    store.getState().setResponseFormat({ kind: 'json_schema', schemaText: '{"type": ' });
    await store.getState().continueReply(replyId);
    expect(store.getState().error).toBeNull();
    const again = bridge.calls.filter((c) => c.channel === 'chat.start').at(-1)!.request as Record<string, unknown>;
    expect(again).toMatchObject({ mode: 'chat', continue_final_message: true });
    expect(again).not.toHaveProperty('response_format');
    expect(reply.tokens!.map((t) => t.token)).toEqual(['Once', ' upon', ' a', ' time']);
  });
});
