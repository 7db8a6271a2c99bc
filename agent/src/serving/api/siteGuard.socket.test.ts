/**
 * The cross-site defences over real sockets, with raw node:http requests whose Host and
 * Origin a browser page could cause: at a rank's own port (an API server over a fake
 * engine) and at the front router over two of them. A refused request gets its 403 and
 * starts nothing (no engine step, nothing routed to a rank); requests without Origin,
 * from the server's own origin or from an allowed one run; text/plain bodies get 400 at
 * both. On a non-loopback bind the Host is not checked.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FrontRouter } from '../router/FrontRouter.js';
import { rawRequest as raw } from '../testing/rawHttp.js';
import { startTestServer, type TestServer } from '../testing/testServer.js';

const completion = JSON.stringify({ model: 'tiny', prompt: 'hi', max_tokens: 2 });
const json = { 'content-type': 'application/json' };
const hostOf = (base: string): string => new URL(base).host;

let rank: TestServer;
let ranks: TestServer[];
let router: FrontRouter;
let routerUrl: string;
beforeAll(async () => {
  rank = await startTestServer({ cors: { allowedOrigins: ['https://app.example'] } });
  ranks = await Promise.all([0, 1].map(() => startTestServer()));
  router = new FrontRouter({ backends: ranks.map((r) => r.url), healthIntervalMs: 50, cors: { allowedOrigins: ['https://app.example'], allowedMethods: ['*'], allowedHeaders: ['*'], allowCredentials: false } });
  routerUrl = await router.listen(0, '127.0.0.1');
});
afterAll(async () => {
  await router.close();
  await Promise.all([rank, ...ranks].map((r) => r.close()));
});

describe('a rank\'s own port (loopback bind)', () => {
  it('refuses a foreign Host on every route, generation or not, before anything runs (DNS rebinding)', async () => {
    const steps = rank.engine.steps;
    const forged = { host: `attacker.example:${new URL(rank.url).port}` };
    const post = await raw(rank.url, 'POST', '/v1/completions', { ...forged, ...json }, completion);
    expect(post.status).toBe(403);
    expect(post.error?.code).toBe('forbidden_host');
    expect(post.error?.message).toMatch(/^Host "attacker\.example:\d+" is not a loopback name/);
    for (const path of ['/metrics', '/health', '/v1/models']) expect((await raw(rank.url, 'GET', path, forged)).status, path).toBe(403);
    expect(rank.engine.steps).toBe(steps);
  });

  it('refuses a foreign Origin with 403 naming it and --allowed-origins; no step runs', async () => {
    const steps = rank.engine.steps;
    const res = await raw(rank.url, 'POST', '/v1/completions', { host: hostOf(rank.url), origin: 'https://attacker.example', ...json }, completion);
    expect(res.status).toBe(403);
    expect(res.error?.code).toBe('forbidden_origin');
    expect(res.error?.message).toMatch(/^Origin "https:\/\/attacker\.example" is not allowed: .* --allowed-origins '\["https:\/\/attacker\.example"\]'/);
    await new Promise((r) => setTimeout(r, 50));
    expect(rank.engine.steps).toBe(steps);
  });

  it('serves no Origin, its own origin, an allowed origin and localhost names; refuses text/plain', async () => {
    const steps = rank.engine.steps;
    const cases: Record<string, string>[] = [{ host: hostOf(rank.url) }, { host: hostOf(rank.url), origin: rank.url }, { host: hostOf(rank.url), origin: 'https://app.example' }, { host: `localhost:${new URL(rank.url).port}` }];
    for (const headers of cases) {
      expect((await raw(rank.url, 'POST', '/v1/completions', { ...headers, ...json }, completion)).status, JSON.stringify(headers)).toBe(200);
    }
    expect(rank.engine.steps).toBeGreaterThan(steps); // what the refusals above are measured against
    const plain = await raw(rank.url, 'POST', '/v1/completions', { host: hostOf(rank.url), 'content-type': 'text/plain' }, completion);
    expect([plain.status, plain.error?.code]).toEqual([400, 'unsupported_media_type']);
  });
});

describe('the front router (loopback bind)', () => {
  const routed = (): number => router.load().reduce((n, b) => n + b.requestsTotal, 0);
  const steps = (): number => ranks.reduce((n, r) => n + r.engine.steps, 0);

  it('refuses a foreign Host and a foreign Origin itself: nothing reaches a rank', async () => {
    const [before, stepsBefore] = [routed(), steps()];
    const host = await raw(routerUrl, 'POST', '/v1/chat/completions', { host: 'attacker.example', ...json }, JSON.stringify({ model: 'tiny', messages: [{ role: 'user', content: 'hi' }] }));
    expect([host.status, host.error?.code]).toEqual([403, 'forbidden_host']);
    expect((await raw(routerUrl, 'GET', '/metrics', { host: 'attacker.example' })).status).toBe(403);
    const origin = await raw(routerUrl, 'POST', '/v1/completions', { host: hostOf(routerUrl), origin: 'http://attacker.example', ...json }, completion);
    expect([origin.status, origin.error?.code]).toEqual([403, 'forbidden_origin']);
    const plain = await raw(routerUrl, 'POST', '/v1/completions', { host: hostOf(routerUrl), 'content-type': 'text/plain' }, completion);
    expect([plain.status, plain.error?.code]).toEqual([400, 'unsupported_media_type']);
    await new Promise((r) => setTimeout(r, 50));
    expect([routed(), steps()]).toEqual([before, stepsBefore]);
  });

  it('routes requests without Origin, from an allowed origin and from its own', async () => {
    const before = routed();
    for (const origin of [undefined, 'https://app.example', routerUrl]) {
      const res = await raw(routerUrl, 'POST', '/v1/completions', { host: hostOf(routerUrl), ...(origin ? { origin } : {}), ...json }, completion);
      expect(res.status, origin).toBe(200);
    }
    expect(routed()).toBe(before + 3);
  });
});

describe('a non-loopback bind', () => {
  it('checks no Host (the Origin still is)', async () => {
    const open = new FrontRouter({ backends: ranks.map((r) => r.url), apiKey: 'k', healthIntervalMs: 50 });
    const port = new URL(await open.listen(0, '0.0.0.0')).port;
    try {
      const base = `http://127.0.0.1:${port}`;
      const auth = { authorization: 'Bearer k', ...json };
      expect((await raw(base, 'POST', '/v1/completions', { host: 'api.example', ...auth }, completion)).status).toBe(200);
      expect((await raw(base, 'POST', '/v1/completions', { host: 'api.example', origin: 'https://attacker.example', ...auth }, completion)).status).toBe(403);
    } finally {
      await open.close();
    }
  });
});
