/**
 * The API surface around the completions, on a real rank server (fake engine): the model by
 * its URL through the official `openai` client, /version, /tokenize and /detokenize behind the
 * API key, JSON-only bodies refused the way vLLM refuses them, and CORS off by default and on
 * with the api section's options.
 */
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jsonOf } from '../testing/httpBodies.js';
import { startTestServer, type TestServer } from '../testing/testServer.js';

const auth = { authorization: 'Bearer k-1' };
let srv: TestServer;
beforeAll(async () => {
  srv = await startTestServer({ apiKey: 'k-1', engine: { maxModelLen: 256 } });
});
afterAll(() => srv.close());

describe('GET /v1/models/{id} and /version', () => {
  it('client.models.retrieve() gives the list\'s model object; another id is the OpenAI 404', async () => {
    const client = new OpenAI({ baseURL: `${srv.url}/v1`, apiKey: 'k-1', maxRetries: 0 });
    const page = await client.models.list();
    const model = await client.models.retrieve('tiny');
    expect(model).toEqual(page.data[0]);
    expect(model).toMatchObject({ id: 'tiny', object: 'model', owned_by: 'afd', max_model_len: 256 });
    const err = await client.models.retrieve('gpt-4o').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.NotFoundError);
    expect((err as InstanceType<typeof OpenAI.NotFoundError>).error).toMatchObject({ code: 'model_not_found', param: 'model', type: 'invalid_request_error' });
    // The model directory is accepted as `model` in requests, but it is not a model of the list.
    expect((await fetch(`${srv.url}/v1/models/${encodeURIComponent('/models/tiny')}`, { headers: auth })).status).toBe(404);
    expect((await fetch(`${srv.url}/v1/models/tiny`, { method: 'DELETE', headers: auth })).status).toBe(405);
  });

  it('/version is open and names the agent version', async () => {
    expect(await jsonOf(await fetch(`${srv.url}/version`))).toEqual({ version: '0.0.0-test' });
  });
});

describe('/tokenize and /detokenize', () => {
  it('need the API key like the rest of the API, and round-trip a prompt', async () => {
    const body = JSON.stringify({ model: 'tiny', prompt: 'The quick brown fox' });
    expect((await fetch(`${srv.url}/tokenize`, { method: 'POST', headers: { 'content-type': 'application/json' }, body })).status).toBe(401);
    const t = await jsonOf(await fetch(`${srv.url}/tokenize`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body }));
    expect(t).toMatchObject({ count: t.tokens.length, max_model_len: 256 });
    const d = await jsonOf(await fetch(`${srv.url}/detokenize`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: JSON.stringify({ tokens: t.tokens }) }));
    expect(d).toEqual({ prompt: 'The quick brown fox' });
  });
});

describe('only JSON bodies (vLLM\'s rule)', () => {
  it('a form, text or untyped body is a 400 with vLLM\'s message and the OpenAI error body', async () => {
    const cases: [string, Record<string, string>, string][] = [
      ['/v1/completions', { 'content-type': 'application/x-www-form-urlencoded' }, 'model=tiny&prompt=hi'],
      ['/v1/chat/completions', { 'content-type': 'text/plain;charset=UTF-8' }, '{"model":"tiny","messages":[]}'],
      ['/tokenize', {}, '{"prompt":"hi"}'],
    ];
    for (const [path, headers, body] of cases) {
      const res = await fetch(srv.url + path, { method: 'POST', headers: { ...auth, ...headers }, body: path === '/tokenize' ? new Blob([body]) : body });
      expect(res.status).toBe(400);
      const { error } = await jsonOf(res);
      expect(error).toMatchObject({ type: 'invalid_request_error', code: 'unsupported_media_type', param: null });
      expect(error.message).toMatch(/^Unsupported Media Type: Only 'application\/json' is allowed \(got (Content-Type "[^"]+"|no Content-Type)\)/);
    }
    // A charset parameter is fine.
    const ok = await fetch(`${srv.url}/tokenize`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json; charset=utf-8' }, body: '{"prompt":"hi"}' });
    expect(ok.status).toBe(200);
  });
});

describe('CORS on a rank', () => {
  const ask = (url: string): Promise<Response> =>
    fetch(`${url}/v1/chat/completions`, { method: 'OPTIONS', headers: { origin: 'https://app.example', 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization, content-type' } });

  it('off by default: a preflight gets vLLM\'s 400 without Allow-Origin (before the API key); a request from the origin is refused (403), without CORS headers', async () => {
    const res = await ask(srv.url);
    expect(res.status).toBe(400);
    expect(await res.text()).toBe('Disallowed CORS origin');
    expect(res.headers.get('access-control-allow-origin')).toBeNull();
    const models = await fetch(`${srv.url}/v1/models`, { headers: { ...auth, origin: 'https://app.example' } });
    expect(models.status).toBe(403);
    expect([...models.headers.keys()].filter((k) => k.startsWith('access-control-'))).toEqual([]);
  });

  it('with --allowed-origins: the preflight is answered without the key, and responses (errors too) carry Allow-Origin', async () => {
    const s = await startTestServer({ apiKey: 'k-1', cors: { allowedOrigins: ['https://app.example'], allowCredentials: true } });
    try {
      const res = await ask(s.url);
      expect(res.status).toBe(200);
      expect(res.headers.get('access-control-allow-origin')).toBe('https://app.example');
      expect(res.headers.get('access-control-allow-credentials')).toBe('true');
      expect(res.headers.get('access-control-allow-headers')).toBe('authorization, content-type');
      for (const headers of [{ ...auth }, {}]) {
        const r = await fetch(`${s.url}/v1/models`, { headers: { ...headers, origin: 'https://app.example' } });
        await r.text();
        expect(r.headers.get('access-control-allow-origin')).toBe('https://app.example');
        expect(r.headers.get('vary')).toBe('Origin');
      }
    } finally {
      await s.close();
    }
  });
});
