/** What a failed reply says: the API's words, where it broke, and a status only where there is one. */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { APIConnectionError, APIError } from 'openai';
import { afterEach, describe, expect, it } from 'vitest';
import type { BridgePushChannel } from '@afd/shared';
import { ChatRunner } from './ChatRunner.js';
import { describeChatError, truncatedStreamText } from './chatErrorText.js';

const apiUrl = 'http://127.0.0.1:8000';
const engineError = { message: 'engine step failed: timed out waiting for FFN rank 1', type: 'server_error', param: null, code: 'engine_error' };

describe('describeChatError', () => {
  it('an error event mid-stream: "the stream ended", the message and its code, no made-up status', () => {
    // What the SDK throws for `data: {"error": ...}` in a stream: an APIError without a status.
    const err = new APIError(undefined, engineError, undefined, new Headers());
    const text = describeChatError(err, { apiUrl, streaming: true });
    expect(text).toBe('the stream ended: engine step failed: timed out waiting for FFN rank 1 (engine_error)');
    expect(text).not.toMatch(/HTTP|\?/);
  });

  it('an HTTP error answer names its real status', () => {
    const err = (status: number, code = 'x') => new APIError(status, { message: 'boom', code }, undefined, new Headers());
    expect(describeChatError(err(500), { apiUrl, streaming: false })).toBe('the API answered HTTP 500: boom');
    expect(describeChatError(err(400), { apiUrl, streaming: false })).toBe('the API rejected the request: boom');
    expect(describeChatError(err(503, 'step_failed'), { apiUrl, streaming: false })).toBe('the topology is not ready to serve (boom); wait for every rank to be ready');
  });

  it('a connection failure: not reachable before the answer, broken mid-reply after it', () => {
    const err = new APIConnectionError({ message: 'Connection error.' });
    expect(describeChatError(err, { apiUrl, streaming: false })).toBe(`the topology API at ${apiUrl} is not reachable (Connection error.); check the Launch screen: is the topology running?`);
    expect(describeChatError(err, { apiUrl, streaming: true })).toBe(`the stream ended: the connection to the topology API at ${apiUrl} broke mid-reply (Connection error.); check the Launch screen`);
  });

  it('any other failure says whether the stream had begun', () => {
    expect(describeChatError(new TypeError('terminated'), { apiUrl, streaming: true })).toBe('the stream ended: terminated');
    expect(describeChatError(new Error('no models'), { apiUrl, streaming: false })).toBe('chat failed: no models');
  });

  it('a stream closed without a finish reason says how far it got', () => {
    expect(truncatedStreamText(1)).toMatch(/^the stream ended before the reply finished: the API closed it after 1 chunk without a finish reason/);
  });
});

/** An API whose chat stream sends `events` (SSE data lines) and closes. */
let server: Server | undefined;
async function streamingApi(events: string[]): Promise<string> {
  server = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    for (const e of events) res.write(`data: ${e}\n\n`);
    res.end();
  });
  await new Promise<void>((r) => server!.listen(0, '127.0.0.1', r));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}
afterEach(() => new Promise<void>((r) => (server ? server.close(() => r()) : r())));

async function run(url: string): Promise<{ channel: BridgePushChannel; payload: unknown }[]> {
  const pushes: { channel: BridgePushChannel; payload: unknown }[] = [];
  const runner = new ChatRunner({
    chatId: 'c1',
    apiUrl: url,
    model: 'm',
    request: { mode: 'chat', messages: [{ role: 'user', content: 'hi' }], sampling: { temperature: 0, topP: 1, topK: 0, maxTokens: 8, seed: null, minP: 0, presencePenalty: 0, frequencyPenalty: 0, repetitionPenalty: 1, stop: [], topLogprobs: null } },
    push: (channel, payload) => void pushes.push({ channel, payload }),
  });
  await runner.run();
  return pushes;
}

const chunk = (content: string, finish: string | null = null) => JSON.stringify({ id: 'x', object: 'chat.completion.chunk', created: 0, model: 'm', choices: [{ index: 0, delta: { content }, finish_reason: finish }] });

describe('ChatRunner: a stream that breaks (the real SDK over HTTP)', () => {
  it('an error event after some text is "the stream ended: ..."', async () => {
    const pushes = await run(await streamingApi([chunk('Hello'), chunk(' there'), JSON.stringify({ error: engineError }), '[DONE]']));
    expect(pushes.filter((p) => p.channel === 'chat.delta')).toHaveLength(2);
    expect(pushes.at(-1)).toEqual({ channel: 'chat.error', payload: { chatId: 'c1', message: 'the stream ended: engine step failed: timed out waiting for FFN rank 1 (engine_error)' } });
  });

  it('a stream closed with neither a finish reason nor [DONE] is an error, not a finished reply', async () => {
    const pushes = await run(await streamingApi([chunk('Hello')]));
    expect(pushes.map((p) => p.channel)).toEqual(['chat.accepted', 'chat.delta', 'chat.error']);
    expect(pushes.at(-1)!.payload).toMatchObject({ message: truncatedStreamText(1) });
  });

  it('a finish reason ends it as done', async () => {
    const pushes = await run(await streamingApi([chunk('Hello'), chunk('', 'stop'), '[DONE]']));
    expect(pushes.at(-1)).toMatchObject({ channel: 'chat.done', payload: { finishReason: 'stop' } });
  });
});
