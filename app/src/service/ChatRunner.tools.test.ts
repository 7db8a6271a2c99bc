/**
 * ChatRunner with tools over real loopback HTTP against a scripted OpenAI stream (the API
 * is the faked boundary: the agent's tool calling is built elsewhere): the request carries
 * the structured-output and tool fields and the tool turns, and the streamed tool-call
 * fragments reach the renderer as chat.delta pushes, ending with finish reason tool_calls.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { validateBridgePush, type BridgePush, type BridgePushChannel, type BridgeRequest } from '@afd/shared';
import { ChatRunner } from './ChatRunner.js';

const chunk = (delta: Record<string, unknown>, finish: string | null = null): Record<string, unknown> => ({
  id: 'chatcmpl-1',
  object: 'chat.completion.chunk',
  created: 0,
  model: 'tiny',
  choices: [{ index: 0, delta, finish_reason: finish }],
});

/** What the scripted API streams: two calls in fragments (a later fragment with nulls, as some servers send), then the finish and usage. */
const STREAM = [
  chunk({ role: 'assistant', content: '' }),
  chunk({ tool_calls: [{ index: 0, id: 'call_w', type: 'function', function: { name: 'get_weather', arguments: '' } }] }),
  chunk({ tool_calls: [{ index: 0, id: null, type: null, function: { name: null, arguments: '{"city": "Paris"}' } }] }),
  chunk({ tool_calls: [{ index: 1, id: 'call_t', type: 'function', function: { name: 'get_time', arguments: '{"timezone": "UTC"}' } }] }),
  chunk({}, 'tool_calls'),
  { id: 'chatcmpl-1', object: 'chat.completion.chunk', created: 0, model: 'tiny', choices: [], usage: { prompt_tokens: 30, completion_tokens: 21, total_tokens: 51 } },
];

let server: Server;
let url = '';
const bodies: Record<string, unknown>[] = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    let raw = '';
    req.on('data', (d: Buffer) => (raw += d.toString()));
    req.on('end', () => {
      bodies.push(JSON.parse(raw) as Record<string, unknown>);
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      for (const c of STREAM) res.write(`data: ${JSON.stringify(c)}\n\n`);
      res.end('data: [DONE]\n\n');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));

const request: BridgeRequest<'chat.start'> = {
  mode: 'chat',
  messages: [
    { role: 'user', content: 'Weather in Paris?' },
    { role: 'assistant', content: null, tool_calls: [{ id: 'call_0', type: 'function', function: { name: 'get_weather', arguments: '{"city": "Oslo"}' } }] },
    { role: 'tool', content: '3 C', tool_call_id: 'call_0' },
    { role: 'user', content: 'And Paris, and the time?' },
  ],
  sampling: { temperature: 0, topP: 1, topK: 0, maxTokens: 64, seed: null, minP: 0, presencePenalty: 0, frequencyPenalty: 0, repetitionPenalty: 1, stop: [], topLogprobs: null },
  response_format: { type: 'json_object' },
  tools: [{ type: 'function', function: { name: 'get_weather', parameters: { type: 'object' } } }],
  tool_choice: 'auto',
  parallel_tool_calls: true,
};

describe('ChatRunner with tools', () => {
  it('sends the tool fields and turns, and pushes the streamed calls and finish reason tool_calls', async () => {
    const pushes: { channel: BridgePushChannel; payload: unknown }[] = [];
    await new ChatRunner({ chatId: 'c1', apiUrl: url, model: 'tiny', request, push: (channel, payload) => void pushes.push({ channel, payload }) }).run();
    expect(bodies[0]).toMatchObject({
      model: 'tiny',
      stream: true,
      messages: request.mode === 'chat' ? request.messages : [],
      response_format: { type: 'json_object' },
      tools: [{ type: 'function', function: { name: 'get_weather', parameters: { type: 'object' } } }],
      tool_choice: 'auto',
      parallel_tool_calls: true,
    });
    expect(pushes.find((p) => p.channel === 'chat.accepted')?.payload).toMatchObject({ chatId: 'c1', model: 'tiny' });
    const deltas = pushes.filter((p) => p.channel === 'chat.delta').map((p) => p.payload as BridgePush<'chat.delta'>);
    // The empty role chunk is no delta; each tool-call chunk is one, the first being the prefill.
    expect(deltas.map((d) => [d.text, d.stage, d.toolCalls])).toEqual([
      ['', 'prefill', [{ index: 0, id: 'call_w', type: 'function', function: { name: 'get_weather', arguments: '' } }]],
      ['', 'decode', [{ index: 0, function: { arguments: '{"city": "Paris"}' } }]],
      ['', 'decode', [{ index: 1, id: 'call_t', type: 'function', function: { name: 'get_time', arguments: '{"timezone": "UTC"}' } }]],
    ]);
    const done = pushes.find((p) => p.channel === 'chat.done')?.payload as BridgePush<'chat.done'>;
    expect(done).toMatchObject({ finishReason: 'tool_calls', usage: { promptTokens: 30, completionTokens: 21 } });
    expect(pushes.some((p) => p.channel === 'chat.error')).toBe(false);
    // Every push is one the bridge lets through to the renderer.
    for (const p of pushes) expect(validateBridgePush(p.channel, JSON.parse(JSON.stringify(p.payload))), p.channel).toMatchObject({ ok: true });
  });
});
