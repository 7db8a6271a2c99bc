/**
 * CORS as vLLM answers it (Starlette's CORSMiddleware semantics) over a real loopback HTTP
 * server: preflights with every outcome, and the headers of actual responses.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import { corsConfigSchema, type CorsConfigInput } from '@afd/shared';
import { Cors } from './cors.js';

const servers: Server[] = [];
afterAll(async () => {
  await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
});

/** A server that answers preflights through Cors and everything else with 200 "body". */
async function serve(config: CorsConfigInput): Promise<string> {
  const cors = new Cors(corsConfigSchema.parse(config));
  const server = createServer((req, res) => {
    if (cors.preflight(req, res)) return;
    cors.decorate(req, res);
    res.writeHead(200, { 'content-type': 'text/plain' });
    res.end('body');
  });
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

const preflight = (url: string, headers: Record<string, string>): Promise<Response> => fetch(`${url}/v1/chat/completions`, { method: 'OPTIONS', headers });
const cors = (res: Response): Record<string, string> => Object.fromEntries([...res.headers].filter(([k]) => k.startsWith('access-control-') || k === 'vary'));

describe('CORS off (the default: no origin allowed, as vLLM with --allowed-origins \'[]\')', () => {
  it('refuses every preflight with 400 "Disallowed CORS origin" and no Allow-Origin; actual responses get no CORS headers', async () => {
    const url = await serve({});
    const res = await preflight(url, { origin: 'https://app.example', 'access-control-request-method': 'POST' });
    expect(res.status).toBe(400);
    expect(await res.text()).toBe('Disallowed CORS origin');
    expect(cors(res)).toEqual({ vary: 'Origin', 'access-control-allow-methods': 'DELETE, GET, HEAD, OPTIONS, PATCH, POST, PUT', 'access-control-max-age': '600' });
    const plain = await fetch(url, { headers: { origin: 'https://app.example' } });
    expect(await plain.text()).toBe('body');
    expect(cors(plain)).toEqual({});
  });
});

describe('CORS on', () => {
  it('["*"] (vLLM\'s default): Allow-Origin *, requested headers echoed; a request with a cookie gets its own origin', async () => {
    const url = await serve({ allowedOrigins: ['*'] });
    const res = await preflight(url, { origin: 'https://app.example', 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization, content-type' });
    expect(res.status).toBe(200);
    expect(await res.text()).toBe('OK');
    expect(cors(res)).toEqual({
      'access-control-allow-origin': '*',
      'access-control-allow-methods': 'DELETE, GET, HEAD, OPTIONS, PATCH, POST, PUT',
      'access-control-allow-headers': 'authorization, content-type',
      'access-control-max-age': '600',
    });
    expect(cors(await fetch(url, { headers: { origin: 'https://app.example' } }))).toEqual({ 'access-control-allow-origin': '*' });
    expect(cors(await fetch(url, { headers: { origin: 'https://app.example', cookie: 'a=1' } }))).toEqual({ 'access-control-allow-origin': 'https://app.example', vary: 'Origin' });
    expect(cors(await fetch(url))).toEqual({}); // no Origin: not a CORS request
  });

  it('a list of origins: the request\'s origin echoed with Vary: Origin; another origin is refused', async () => {
    const url = await serve({ allowedOrigins: ['https://app.example'] });
    const ok = await preflight(url, { origin: 'https://app.example', 'access-control-request-method': 'GET' });
    expect(ok.status).toBe(200);
    expect(cors(ok)).toMatchObject({ 'access-control-allow-origin': 'https://app.example', vary: 'Origin' });
    const other = await preflight(url, { origin: 'https://evil.example', 'access-control-request-method': 'GET' });
    expect(other.status).toBe(400);
    expect(cors(other)['access-control-allow-origin']).toBeUndefined();
    expect(cors(await fetch(url, { headers: { origin: 'https://app.example' } }))).toEqual({ 'access-control-allow-origin': 'https://app.example', vary: 'Origin' });
    expect(cors(await fetch(url, { headers: { origin: 'https://evil.example' } }))).toEqual({});
  });

  it('names every refused part: origin, method, headers; listed headers add to the safelisted ones', async () => {
    const url = await serve({ allowedOrigins: ['https://app.example'], allowedMethods: ['GET', 'POST'], allowedHeaders: ['Authorization'] });
    const bad = await preflight(url, { origin: 'https://evil.example', 'access-control-request-method': 'DELETE', 'access-control-request-headers': 'x-custom' });
    expect(await bad.text()).toBe('Disallowed CORS origin, method, headers');
    const ok = await preflight(url, { origin: 'https://app.example', 'access-control-request-method': 'POST', 'access-control-request-headers': 'Content-Type, authorization' });
    expect(ok.status).toBe(200);
    expect(cors(ok)).toMatchObject({ 'access-control-allow-methods': 'GET, POST', 'access-control-allow-headers': 'Accept, Accept-Language, Authorization, Content-Language, Content-Type' });
  });

  it('--allow-credentials: Allow-Credentials true, and never Allow-Origin * on a preflight', async () => {
    const url = await serve({ allowedOrigins: ['*'], allowCredentials: true });
    const res = await preflight(url, { origin: 'https://app.example', 'access-control-request-method': 'POST' });
    expect(cors(res)).toMatchObject({ 'access-control-allow-origin': 'https://app.example', 'access-control-allow-credentials': 'true', vary: 'Origin' });
    expect(cors(await fetch(url, { headers: { origin: 'https://app.example' } }))).toEqual({ 'access-control-allow-origin': '*', 'access-control-allow-credentials': 'true' });
  });

  it('an OPTIONS without Access-Control-Request-Method is not a preflight: it reaches the routes', async () => {
    const url = await serve({ allowedOrigins: ['*'] });
    const res = await fetch(url, { method: 'OPTIONS', headers: { origin: 'https://app.example' } });
    expect(await res.text()).toBe('body');
  });
});
