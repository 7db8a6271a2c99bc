/** The chat store with structured output and tools: what a send carries, streamed tool calls, tool results that continue the chat, and a reload. */
import { describe, expect, it } from 'vitest';
import type { BridgePush } from '@afd/shared';
import { memoryStorage } from '../lib/persist.js';
import { createFakeBridge, type FakeBridge } from '../testing/fakeBridge.js';
import { activeMessages, createChatStore } from './chatStore.js';
import { SAMPLE_SCHEMA } from './responseFormat.js';
import { SAMPLE_TOOLS } from './toolSettings.js';

const timings = { sinceStartMs: 10, sincePrevMs: 10 };
const done = (chatId: string, finishReason: BridgePush<'chat.done'>['finishReason']): BridgePush<'chat.done'> => ({
  chatId,
  finishReason,
  usage: { promptTokens: 3, completionTokens: 9 },
  timings: { ttftMs: 5, totalMs: 20, tokensPerSecond: 10 },
});

function setup(): { bridge: FakeBridge; requests: () => Record<string, unknown>[] } {
  const bridge = createFakeBridge();
  let n = 0;
  bridge.handle('chat.start', () => ({ chatId: `c${++n}` }));
  bridge.handle('chat.stop', () => ({ stopped: true }));
  return { bridge, requests: () => bridge.calls.filter((c) => c.channel === 'chat.start').map((c) => c.request as Record<string, unknown>) };
}

/** Streams two parallel calls in OpenAI's fragments on chat `chatId`, then finishes with tool_calls. */
function streamTwoCalls(bridge: FakeBridge, chatId: string): void {
  const frag = (toolCalls: BridgePush<'chat.delta'>['toolCalls']): void => bridge.emit('chat.delta', { chatId, text: '', toolCalls, stage: 'decode', timings });
  bridge.emit('chat.accepted', { chatId, sinceStartMs: 1, model: 'tiny-model' });
  frag([{ index: 0, id: 'call_w', type: 'function', function: { name: 'get_weather', arguments: '' } }]);
  frag([{ index: 0, function: { arguments: '{"city": "Par' } }]);
  frag([{ index: 0, function: { arguments: 'is"}' } }, { index: 1, id: 'call_t', type: 'function', function: { name: 'get_time', arguments: '{"timezone": "Europe/Paris"}' } }]);
  bridge.emit('chat.done', done(chatId, 'tool_calls'));
}

describe('chat store: response format and tools', () => {
  it('sends response_format, tools, tool_choice and parallel_tool_calls in chat mode only', async () => {
    const { bridge, requests } = setup();
    const store = createChatStore(bridge);
    store.getState().setResponseFormat({ kind: 'json_schema', schemaName: 'weather', schemaText: SAMPLE_SCHEMA });
    store.getState().setTools({ toolsText: SAMPLE_TOOLS, toolChoice: 'get_time', parallelToolCalls: false });
    await store.getState().send('Weather?');
    const r = requests()[0]!;
    expect(r['response_format']).toEqual({ type: 'json_schema', json_schema: { name: 'weather', schema: JSON.parse(SAMPLE_SCHEMA), strict: true } });
    expect(r['tools']).toEqual(JSON.parse(SAMPLE_TOOLS));
    expect(r['tool_choice']).toEqual({ type: 'function', function: { name: 'get_time' } });
    expect(r['parallel_tool_calls']).toBe(false);
    bridge.emit('chat.done', done('c1', 'stop'));
    store.getState().setMode('completion');
    await store.getState().send('Once upon');
    expect(Object.keys(requests()[1]!).sort()).toEqual(['mode', 'prompt', 'sampling']);
  });

  it('sends none of the fields for text and no tools, and a JSON object format as such', async () => {
    const { bridge, requests } = setup();
    const store = createChatStore(bridge);
    await store.getState().send('hi');
    expect(Object.keys(requests()[0]!).sort()).toEqual(['messages', 'mode', 'sampling']);
    bridge.emit('chat.done', done('c1', 'stop'));
    store.getState().setResponseFormat({ kind: 'json_object' });
    store.getState().setTools({ toolChoice: 'required' }); // no tools: not sent
    await store.getState().send('again');
    expect(requests()[1]).toMatchObject({ response_format: { type: 'json_object' } });
    expect(requests()[1]!['tool_choice']).toBeUndefined();
  });

  it('refuses to send with a broken schema or tools list, saying which and why', async () => {
    const { bridge, requests } = setup();
    const store = createChatStore(bridge);
    store.getState().setResponseFormat({ kind: 'json_schema', schemaText: '{"type": "object",}' });
    await store.getState().send('x');
    expect(store.getState().error).toMatch(/^invalid response format: not valid JSON/);
    store.getState().setResponseFormat({ kind: 'text' });
    store.getState().setTools({ toolsText: '[{"type": "function", "function": {"name": "a b"}}]' });
    await store.getState().send('x');
    expect(store.getState().error).toBe('invalid tools: tools[0].function.name: must be 1 to 64 letters, digits, _ or -');
    store.getState().setTools({ toolsText: SAMPLE_TOOLS, toolChoice: 'get_stock' });
    await store.getState().send('x');
    expect(store.getState().error).toMatch(/tool choice names get_stock, which is not in the tools list/);
    expect(requests()).toHaveLength(0);
    expect(activeMessages(store.getState())).toHaveLength(0);
  });

  it('folds streamed tool calls into the reply, ends it with tool_calls, and remembers the model id', async () => {
    const { bridge } = setup();
    const store = createChatStore(bridge);
    store.getState().setTools({ toolsText: SAMPLE_TOOLS });
    await store.getState().send('Weather and time in Paris?');
    bridge.emit('chat.delta', { chatId: 'c1', text: '', toolCalls: [{ index: 0, id: 'call_w', function: { name: 'get_weather', arguments: '{"ci' } }], stage: 'prefill', timings });
    let reply = activeMessages(store.getState())[1]!;
    expect(reply.stage).toBe('decode');
    expect(reply.toolCalls).toEqual([{ index: 0, id: 'call_w', name: 'get_weather', arguments: '{"ci' }]);
    bridge.emit('chat.delta', { chatId: 'c1', text: '', toolCalls: [{ index: 0, function: { arguments: 'ty": "Paris"}' } }], stage: 'decode', timings });
    streamTwoCalls(bridge, 'c1');
    reply = activeMessages(store.getState())[1]!;
    expect(reply.stage).toBe('done');
    expect(reply.finishReason).toBe('tool_calls');
    expect(reply.toolCalls!.map((c) => [c.id, c.name])).toEqual([
      ['call_w', 'get_weather'],
      ['call_t', 'get_time'],
    ]);
    expect(store.getState().servedModelId).toBe('tiny-model');
  });

  it('takes a result per call; the last one continues the chat with the calls and results in the history', async () => {
    const { bridge, requests } = setup();
    const store = createChatStore(bridge);
    store.getState().setTools({ toolsText: SAMPLE_TOOLS });
    await store.getState().send('Weather and time in Paris?');
    streamTwoCalls(bridge, 'c1');
    const replyId = activeMessages(store.getState())[1]!.id;
    expect(await store.getState().answerToolCall(replyId, 'call_t', '   ')).toBe(false);
    expect(store.getState().error).toMatch(/type the tool's result first/);
    expect(await store.getState().answerToolCall(replyId, 'call_w', '{"temperature_c": 18}')).toBe(true);
    expect(requests()).toHaveLength(1); // one call still waits
    expect(await store.getState().answerToolCall(replyId, 'call_w', 'again')).toBe(false);
    expect(store.getState().error).toMatch(/answered already/);
    expect(await store.getState().answerToolCall(replyId, 'call_t', '14:05')).toBe(true);
    const msgs = activeMessages(store.getState());
    expect(msgs.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'tool', 'assistant']);
    expect(msgs[4]!.stage).toBe('queued');
    expect(requests()[1]!['messages']).toEqual([
      { role: 'user', content: 'Weather and time in Paris?' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          { id: 'call_w', type: 'function', function: { name: 'get_weather', arguments: '{"city": "Paris"}' } },
          { id: 'call_t', type: 'function', function: { name: 'get_time', arguments: '{"timezone": "Europe/Paris"}' } },
        ],
      },
      { role: 'tool', content: '{"temperature_c": 18}', tool_call_id: 'call_w' },
      { role: 'tool', content: '14:05', tool_call_id: 'call_t' },
    ]);
    expect(requests()[1]!['tools']).toEqual(JSON.parse(SAMPLE_TOOLS));
    // A regenerate of the answer after the results answers the results again.
    bridge.emit('chat.delta', { chatId: 'c2', text: 'Sunny, 18 C.', stage: 'prefill', timings });
    bridge.emit('chat.done', done('c2', 'stop'));
    await store.getState().regenerate(activeMessages(store.getState())[4]!.id);
    expect(requests()[2]!['messages']).toEqual(requests()[1]!['messages']);
  });

  it('a user message typed instead of a result drops the unanswered call from the history', async () => {
    const { bridge, requests } = setup();
    const store = createChatStore(bridge);
    store.getState().setTools({ toolsText: SAMPLE_TOOLS });
    await store.getState().send('Weather and time in Paris?');
    streamTwoCalls(bridge, 'c1');
    const replyId = activeMessages(store.getState())[1]!.id;
    await store.getState().answerToolCall(replyId, 'call_w', 'sunny');
    await store.getState().send('Never mind the time.');
    const sent = requests()[1]!['messages'] as { role: string; tool_calls?: { id: string }[] }[];
    expect(sent.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'user']);
    expect(sent[1]!.tool_calls!.map((c) => c.id)).toEqual(['call_w']);
    expect(await store.getState().answerToolCall(replyId, 'call_t', 'late')).toBe(false);
  });

  it('a reload keeps the settings, the tool calls, the finish reason and the results', async () => {
    const { bridge } = setup();
    const storage = memoryStorage();
    const a = createChatStore(bridge, { storage, saveDelayMs: 0 });
    a.getState().setTools({ toolsText: SAMPLE_TOOLS, toolChoice: 'required', parallelToolCalls: false });
    await a.getState().send('Weather and time in Paris?');
    streamTwoCalls(bridge, 'c1');
    await a.getState().answerToolCall(activeMessages(a.getState())[1]!.id, 'call_w', 'sunny');
    // A schema half typed is kept as typed.
    a.getState().setResponseFormat({ kind: 'json_schema', schemaName: 'w', schemaText: '{"type": "obj' });
    await new Promise((r) => setTimeout(r, 10));
    const b = createChatStore(createFakeBridge(), { storage });
    expect(b.getState().responseFormat).toEqual({ kind: 'json_schema', schemaName: 'w', schemaText: '{"type": "obj' });
    expect(b.getState().tools).toEqual({ toolsText: SAMPLE_TOOLS, toolChoice: 'required', parallelToolCalls: false });
    const msgs = activeMessages(b.getState());
    expect(msgs[1]).toMatchObject({ finishReason: 'tool_calls', toolCalls: [{ id: 'call_w' }, { id: 'call_t' }] });
    expect(msgs[2]).toMatchObject({ role: 'tool', content: 'sunny', toolCall: { id: 'call_w', name: 'get_weather' } });
  });
});
