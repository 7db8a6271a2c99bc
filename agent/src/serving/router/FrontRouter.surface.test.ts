/**
 * The routes beyond completions through the front router over two real API servers (fake
 * engines): the model by its URL, /version, /tokenize and /detokenize are forwarded with their
 * bodies, a non-JSON body is refused at the router as a rank refuses it, and CORS is the
 * router's own (ranks never see the Origin, so no header comes twice).
 */
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jsonOf } from '../testing/httpBodies.js';
import { startTestServer, type TestServer } from '../testing/testServer.js';
import { FrontRouter } from './FrontRouter.js';

const key = 'k-router';
const auth = { authorization: `Bearer ${key}` };
let ranks: TestServer[];
let plain: FrontRouter;
let withCors: FrontRouter;
let url: string;
let corsUrl: string;
beforeAll(async () => {
  ranks = await Promise.all([0, 1].map(() => startTestServer({ apiKey: key, cors: { allowedOrigins: ['*'] } })));
  const backends = ranks.map((r) => r.url);
  plain = new FrontRouter({ backends, apiKey: key, healthIntervalMs: 50 });
  withCors = new FrontRouter({ backends, apiKey: key, healthIntervalMs: 50, cors: { allowedOrigins: ['https://app.example'], allowedMethods: ['*'], allowedHeaders: ['*'], allowCredentials: false } });
  [url, corsUrl] = await Promise.all([plain.listen(0, '127.0.0.1'), withCors.listen(0, '127.0.0.1')]);
});
afterAll(async () => {
  await Promise.all([plain.close(), withCors.close()]);
  await Promise.all(ranks.map((r) => r.close()));
});

const postJson = (base: string, path: string, body: unknown): Promise<Response> =>
  fetch(base + path, { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: JSON.stringify(body) });

describe('FrontRouter: routes beyond completions', () => {
  it('models.retrieve() and /version come from a rank', async () => {
    const client = new OpenAI({ baseURL: `${url}/v1`, apiKey: key, maxRetries: 0 });
    expect(await client.models.retrieve('tiny')).toMatchObject({ id: 'tiny', object: 'model' });
    await expect(client.models.retrieve('nope')).rejects.toBeInstanceOf(OpenAI.NotFoundError);
    expect(await jsonOf(await fetch(`${url}/version`))).toEqual({ version: '0.0.0-test' });
  });

  it('/tokenize and /detokenize are forwarded with their bodies, the API key checked', async () => {
    const t = await jsonOf(await postJson(url, '/tokenize', { model: 'tiny', prompt: 'Hello world', return_token_strs: true }));
    expect(t).toMatchObject({ count: 2, token_strs: ['Hello', 'Ġworld'] });
    expect(await jsonOf(await postJson(url, '/detokenize', { tokens: t.tokens }))).toEqual({ prompt: 'Hello world' });
    const noKey = await fetch(`${url}/tokenize`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"prompt":"x"}' });
    expect(noKey.status).toBe(401);
    await noKey.text();
  });

  it('a body that is not JSON is refused at the router, as the ranks refuse it, before any rank is asked', async () => {
    const routed = (): number => plain.load().reduce((n, b) => n + b.requestsTotal, 0);
    const before = routed();
    const form = await fetch(`${url}/v1/completions`, { method: 'POST', headers: { ...auth, 'content-type': 'application/x-www-form-urlencoded' }, body: 'model=tiny&prompt=hi' });
    expect(form.status).toBe(400);
    expect((await jsonOf(form)).error.message).toMatch(/^Unsupported Media Type: Only 'application\/json' is allowed \(got Content-Type "application\/x-www-form-urlencoded"\)/);
    const untyped = await fetch(`${url}/tokenize`, { method: 'POST', headers: auth, body: new Blob(['{"prompt":"hi"}']) });
    expect((await jsonOf(untyped)).error.message).toMatch(/got no Content-Type/);
    expect(routed()).toBe(before);
  });

  it('CORS is the router\'s: off by default; with its options it answers preflights and decorates responses once', async () => {
    const preflight = { origin: 'https://app.example', 'access-control-request-method': 'POST' };
    const off = await fetch(`${url}/v1/completions`, { method: 'OPTIONS', headers: preflight });
    expect([off.status, await off.text()]).toEqual([400, 'Disallowed CORS origin']);
    const on = await fetch(`${corsUrl}/v1/completions`, { method: 'OPTIONS', headers: preflight });
    expect([on.status, await on.text()]).toEqual([200, 'OK']);
    expect(on.headers.get('access-control-allow-origin')).toBe('https://app.example');
    // The ranks allow any origin, but they never see it: one Allow-Origin, the router's.
    const withOrigin = await fetch(`${corsUrl}/tokenize`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json', origin: 'https://app.example' }, body: '{"prompt":"hi"}' });
    expect(withOrigin.status).toBe(200);
    expect(withOrigin.headers.get('access-control-allow-origin')).toBe('https://app.example');
    expect((await jsonOf(withOrigin)).count).toBe(1);
  });
});
