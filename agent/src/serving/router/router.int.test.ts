/**
 * The front router over real rank processes (two colocated ranks, CPU, the small serving
 * model): /tokenize and the other routes beyond completions are forwarded; deeply nested
 * JSON is forwarded as sent and refused by the rank with a 400; a rank that answers 429 (its
 * one sequence slot taken, --max-queued-requests 0) is retried once on the other rank, and
 * when none is left the 429 reaches the client with Retry-After; a rank hung by SIGSTOP in
 * the middle of a stream has that stream ended with an error event and [DONE] after the
 * upstream timeout, and serves again after SIGCONT.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { killAllRoles, RoleProcess } from '../../testing/RoleProcess.js';
import { makeServingModel } from '../../testing/servingModel.js';
import { postStream } from '../../testing/sseClient.js';
import { FrontRouter } from './FrontRouter.js';

const home = mkdtempSync(join(tmpdir(), 'afd-router-int-'));
let busy: RoleProcess;
let good: RoleProcess;
let busyUrl: string;
let goodUrl: string;
const routers: FrontRouter[] = [];

beforeAll(async () => {
  const model = await makeServingModel(join(home, 'model'));
  busy = await RoleProcess.start({ role: 'colocated', model, home, args: ['--max-num-seqs', '1', '--max-queued-requests', '0'] });
  good = await RoleProcess.start({ role: 'colocated', model, home });
  [busyUrl, goodUrl] = await Promise.all([busy.ready(), good.ready()]);
}, 180_000);

afterAll(async () => {
  good?.child.kill('SIGCONT');
  for (const r of routers) await r.close();
  await killAllRoles();
  rmSync(home, { recursive: true, force: true });
});

async function router(backends: string[], o: { upstreamTimeoutMs?: number; prefixAffinity?: boolean } = {}): Promise<{ r: FrontRouter; url: string }> {
  const r = new FrontRouter({ backends, healthIntervalMs: 200, upstreamTimeoutMs: 30_000, ...o });
  routers.push(r);
  return { r, url: await r.listen(0, '127.0.0.1') };
}

const completion = { model: 'm', prompt: [5, 6, 7], max_tokens: 3, ignore_eos: true };

describe('FrontRouter over real ranks', () => {
  it('forwards deeply nested JSON untouched: the rank answers 400, the router does not fail with 500', async () => {
    const { url } = await router([goodUrl]);
    const res = await fetch(`${url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: `{"model":"m","messages":${'['.repeat(100_000)}${']'.repeat(100_000)}}` });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: { message: string } }).error.message).toMatch(/messages/);
  });

  it('retries a 429 once on the other rank; with no other rank the 429 comes back with Retry-After', async () => {
    // Fill the busy rank's one slot directly: from now on it refuses what would wait.
    const hold = new AbortController();
    const held = postStream(`${busyUrl}/v1/completions`, { ...completion, max_tokens: 30_000, stream: true }, {}, { signal: hold.signal });
    await expect.poll(async () => (await fetch(`${busyUrl}/metrics`).then((x) => x.text())).includes('vllm:num_requests_running{model_name="m"} 1'), { timeout: 30_000, interval: 50 }).toBe(true);
    const { r, url } = await router([busyUrl, goodUrl], { prefixAffinity: false });
    // Idle and healthy alike, the busy rank (index 0) is picked first (by load alone) and refuses.
    const res = await fetch(`${url}/v1/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(completion) });
    expect(res.status).toBe(200);
    expect(((await res.json()) as { choices: unknown[] }).choices).toHaveLength(1);
    const text = await (await fetch(`${url}/metrics`)).text();
    expect(text).toContain('afd:router_requests_total{backend="0"} 1');
    expect(text).toContain('afd:router_requests_total{backend="1"} 1');
    expect(r.load()[0]!.healthy).toBe(true); // busy is not down

    const { url: only } = await router([busyUrl]);
    const refused = await fetch(`${only}/v1/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(completion) });
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toBe('1');
    expect(((await refused.json()) as { error: { message: string } }).error.message).toMatch(/too many queued requests/);
    hold.abort();
    await held;
  });

  it('forwards /tokenize, /detokenize, /v1/models/{id} and /version to real ranks; their metrics name the KV cache', async () => {
    const { url } = await router([busyUrl, goodUrl]);
    const post = (path: string, body: unknown): Promise<Record<string, unknown>> =>
      fetch(`${url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }).then((x) => x.json() as Promise<Record<string, unknown>>);
    const t = await post('/tokenize', { model: 'm', prompt: 'Hello world' });
    expect(t).toMatchObject({ count: 2, tokens: [9707, 1879], token_strs: null });
    expect(await post('/detokenize', { tokens: t['tokens'] })).toEqual({ prompt: 'Hello world' });
    expect(await fetch(`${url}/v1/models/m`).then((x) => x.json())).toMatchObject({ id: 'm', object: 'model' });
    expect(await fetch(`${url}/version`).then((x) => x.json())).toHaveProperty('version');
    const text = await (await fetch(`${url}/metrics`)).text();
    expect(text).toMatch(/^vllm:cache_config_info\{block_size="16",.*num_gpu_blocks="\d+",backend="1"\} 1$/m);
  });

  it('ends the stream of a hung rank with an error event and [DONE] after the upstream timeout; the rank serves again after SIGCONT', { timeout: 120_000 }, async () => {
    const { r, url } = await router([goodUrl], { upstreamTimeoutMs: 1500 });
    const stream = postStream(`${url}/v1/completions`, { ...completion, max_tokens: 30_000, stream: true });
    await expect.poll(() => r.inFlight, { timeout: 30_000, interval: 20 }).toBe(1);
    await new Promise((res) => setTimeout(res, 300)); // tokens flowing
    good.child.kill('SIGSTOP');
    const stoppedAt = performance.now();
    let o;
    try {
      o = await stream;
    } finally {
      good.child.kill('SIGCONT');
    }
    const waited = performance.now() - stoppedAt;
    expect(o.status).toBe(200);
    expect(o.tokens).toBeGreaterThan(0);
    expect(o.broken).toBeNull();
    expect(o.done).toBe(true);
    expect(o.errors.map((e) => e.code)).toEqual(['upstream_timeout']);
    expect(waited).toBeGreaterThan(1400);
    expect(waited).toBeLessThan(15_000); // the timeout, the health poll and a loaded CI box
    await expect.poll(async () => (await fetch(`${url}/health`)).status, { timeout: 30_000, interval: 100 }).toBe(200);
    expect((await fetch(`${url}/v1/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(completion) })).status).toBe(200);
  });
});
