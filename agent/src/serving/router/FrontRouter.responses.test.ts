/**
 * POST /v1/responses through the front router: balanced and retried like the completions,
 * its streams (named events, no [DONE]) relayed whole, and a stream the rank breaks off
 * ended with a Responses `error` event that continues the sequence numbers.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../testing/testServer.js';
import { estimateTokens, FrontRouter } from './FrontRouter.js';

/** A hand-written rank: /health answers 200; every other request goes to `handle`. */
async function fakeRank(handle: (req: IncomingMessage, res: ServerResponse) => void): Promise<{ url: string; server: Server; hits: number }> {
  const state = { url: '', server: undefined as unknown as Server, hits: 0 };
  state.server = createServer((req, res) => {
    if (req.url === '/health') return void res.writeHead(200, { 'content-type': 'application/json' }).end('{"status":"ok"}');
    state.hits++;
    req.resume();
    req.on('end', () => handle(req, res));
  });
  await new Promise<void>((r) => state.server.listen(0, '127.0.0.1', r));
  state.url = `http://127.0.0.1:${(state.server.address() as AddressInfo).port}`;
  return state;
}

let good: TestServer;
const routers: FrontRouter[] = [];
const servers: Server[] = [];
async function router(backends: string[]): Promise<string> {
  const r = new FrontRouter({ backends, healthIntervalMs: 50 });
  routers.push(r);
  return r.listen(0, '127.0.0.1');
}

beforeAll(async () => {
  good = await startTestServer({ engine: { stepDelayMs: 2 } });
});
afterAll(async () => {
  for (const r of routers) await r.close();
  for (const s of servers) s.close();
  await good.close();
});

const post = (url: string, body: unknown): Promise<Response> => fetch(`${url}/v1/responses`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

describe('FrontRouter and /v1/responses', () => {
  it('forwards responses, whole and streamed; a stream ends at its final event with nothing added', async () => {
    const client = new OpenAI({ baseURL: `${await router([good.url])}/v1`, apiKey: 'x', maxRetries: 0 });
    const whole = await client.responses.create({ model: 'tiny', input: 'Hello', max_output_tokens: 4 });
    expect(whole.output_text.length).toBeGreaterThan(0);
    const stream = await client.responses.create({ model: 'tiny', input: 'Hello', max_output_tokens: 4, stream: true });
    const types: string[] = [];
    for await (const e of stream) types.push(e.type);
    expect(types[0]).toBe('response.created');
    expect(types.at(-1)).toBe('response.incomplete');
    expect(types).not.toContain('error');
  });

  it('retries a refusing rank once on another, as for completions, and balances by max_output_tokens', async () => {
    const busy = await fakeRank((_, res) => res.writeHead(429, { 'content-type': 'application/json' }).end('{"error":{"message":"too many queued requests","type":"x","param":null,"code":null}}'));
    servers.push(busy.server);
    const url = await router([busy.url, good.url]);
    const res = await post(url, { model: 'tiny', input: 'hi', max_output_tokens: 2 });
    expect(res.status).toBe(200);
    expect(busy.hits).toBe(1);
    const body = Buffer.from(JSON.stringify({ input: 'x'.repeat(400), max_output_tokens: 9 }));
    expect(estimateTokens(body)).toBe(Math.ceil(body.length / 4) + 9);
  });

  it('ends a responses stream the rank breaks off with an error event that continues the sequence', async () => {
    const breaker = await fakeRank((_, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('event: response.created\ndata: {"type":"response.created","sequence_number":0}\n\n');
      res.write('event: response.output_text.delta\ndata: {"type":"response.output_text.delta","sequence_number":1,"delta":"a"}\n\n');
      res.write('event: response.output_text.delta\ndata: {"type":"resp'); // half an event, then the rank dies
      setTimeout(() => res.socket?.destroy(), 20);
    });
    servers.push(breaker.server);
    const text = await (await post(await router([breaker.url]), { model: 'tiny', input: 'hi', stream: true })).text();
    const blocks = text.split('\n\n').filter((b) => b !== '');
    expect(blocks).toHaveLength(3);
    expect(blocks[2]).toMatch(/^event: error\ndata: /);
    const error = JSON.parse(blocks[2]!.split('\ndata: ')[1]!);
    expect(error).toMatchObject({ type: 'error', code: 'bad_gateway', param: null, sequence_number: 2 });
    expect(error.message).toMatch(/broke off the response/);
    expect(text).not.toContain('[DONE]');
  });

  it('a responses stream that ends without its final event is an error', async () => {
    const short = await fakeRank((_, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.end('event: response.created\ndata: {"type":"response.created","sequence_number":0}\n\n');
    });
    servers.push(short.server);
    const text = await (await post(await router([short.url]), { model: 'tiny', input: 'hi', stream: true })).text();
    expect(text).toMatch(/event: error\ndata: \{"type":"error","code":"bad_gateway","message":"[^"]*without its final event","param":null,"sequence_number":1\}/);
  });
});
