/**
 * `afd-agent launch` under load, with real processes (2A2F, CPU, the small serving model,
 * an API key): 256 concurrent streams through the front router finish with 0 errors and
 * leave no running request or KV block behind; then one FFN rank is SIGKILLed in the
 * middle of 256 more: every stream still ends cleanly (tokens or an error event, then
 * [DONE]), the healthy block's streams are not touched, the launch restarts the dead rank
 * (afd:rank_restarts_total), the router takes the block back, and new requests succeed on
 * both blocks.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pidsMentioning } from '../testing/AgentProcess.js';
import { startLaunch, type StartedLaunch } from '../testing/LaunchProcess.js';
import { makeServingModel } from '../testing/servingModel.js';
import { postStream, type StreamOutcome } from '../testing/sseClient.js';
import { until as waitUntil } from '../testing/until.js';

const home = mkdtempSync(join(tmpdir(), 'afd-survive-'));
const key = 'survive-test-key';
const auth = { authorization: `Bearer ${key}` };
let launch: StartedLaunch;

beforeAll(async () => {
  const model = await makeServingModel(join(home, 'tiny-serving'));
  launch = await startLaunch(['--topology', '2A2F', '--model', model, '--api-key', key, '--max-model-len', '256', '--stop-grace-ms', '5000'], { home });
}, 300_000);

afterAll(async () => {
  if (launch) {
    expect(await launch.term()).toBe(0);
    const t0 = Date.now();
    while (pidsMentioning(launch.script).length > 0 && Date.now() - t0 < 10_000) await new Promise((r) => setTimeout(r, 50));
    expect(pidsMentioning(launch.script)).toEqual([]); // the restarted rank too
  }
  rmSync(home, { recursive: true, force: true });
});

async function metrics(): Promise<string> {
  return (await fetch(`${launch.api}/metrics`)).text();
}

/** The value of one sample of the router's merged /metrics (0 when absent). */
function sample(text: string, name: string, labels: string): number {
  const line = text.split('\n').find((l) => l.startsWith(`${name}{`) && labels.split(',').every((kv) => l.includes(kv)));
  return line ? Number(line.slice(line.lastIndexOf(' ') + 1)) : 0;
}

const until = (cond: () => Promise<boolean>, what: string, ms: number): Promise<number> =>
  waitUntil(cond, what, ms, {
    explain: async () => {
      const m = (await metrics()).split('\n').filter((l) => /^vllm:(num_requests_running|num_requests_waiting|generation_tokens_total)/.test(l));
      return `${m.join('; ')}; launch stderr: ${launch.stderr().slice(-3000)}`;
    },
  });

/** Both attention ranks idle: no running or waiting request, no KV block in use. */
async function idle(): Promise<boolean> {
  const m = await metrics();
  return [0, 1].every((b) => ['vllm:num_requests_running', 'vllm:num_requests_waiting', 'vllm:kv_cache_usage_perc'].every((n) => sample(m, n, `backend="${b}"`) === 0));
}

function streams(n: number, maxTokens: number): Promise<StreamOutcome>[] {
  return Array.from({ length: n }, (_, i) =>
    postStream(`${launch.api}/v1/completions`, { model: 'tiny-serving', prompt: [100 + (i % 50), 7, 8, 9, 10 + (i % 7)], max_tokens: maxTokens, ignore_eos: true, stream: true }, auth),
  );
}

function clean(o: StreamOutcome): boolean {
  return o.status === 200 && o.broken === null && o.done && (o.tokens > 0 || o.errors.length > 0);
}

describe('a 2A2F launch under load', { timeout: 600_000 }, () => {
  it('serves 256 concurrent streams with 0 errors and frees every KV block', async () => {
    expect((await fetch(`${launch.api}/v1/models`)).status).toBe(401); // the key reaches the router
    const models = (await (await fetch(`${launch.api}/v1/models`, { headers: auth })).json()) as { data: { max_model_len: number; root: string }[] };
    expect(models.data[0]).toMatchObject({ max_model_len: 256, root: 'tiny-serving' }); // --max-model-len reached the ranks; no path shown
    const outcomes = await Promise.all(streams(256, 8));
    const bad = outcomes.filter((o) => !clean(o) || o.errors.length > 0 || o.finish !== 'length');
    expect(bad.map((o) => ({ status: o.status, broken: o.broken, errors: o.errors, body: o.body.slice(0, 200) }))).toEqual([]);
    await until(idle, 'running requests and KV usage back to 0', 30_000);
    const m = await metrics();
    expect(sample(m, 'vllm:request_success_total', 'finished_reason="length"')).toBeGreaterThan(0);
    expect(sample(m, 'afd:router_requests_total', 'backend="0"')).toBeGreaterThan(0);
    expect(sample(m, 'afd:router_requests_total', 'backend="1"')).toBeGreaterThan(0);
  });

  it('an FFN rank killed mid-load: every stream ends cleanly, the launch restarts it, new requests succeed on both blocks', async () => {
    const before = await metrics();
    const routed0 = sample(before, 'afd:router_requests_total', 'backend="0"');
    const routed1 = sample(before, 'afd:router_requests_total', 'backend="1"');
    const generated1 = sample(before, 'vllm:generation_tokens_total', 'backend="1"');
    const load = streams(256, 240); // long enough that the kill below lands mid-stream even on a slow box
    // Kill once both blocks are busy generating this load (full batches, tokens flowing on block 1).
    await until(async () => {
      const m = await metrics();
      const busy = [0, 1].every((b) => sample(m, 'vllm:num_requests_running', `backend="${b}"`) >= 16);
      return busy && sample(m, 'vllm:generation_tokens_total', 'backend="1"') - generated1 >= 64;
    }, 'both blocks generating', 60_000);
    const ffn1 = launch.pids.get('ffn 1')!;
    process.kill(ffn1, 'SIGKILL');
    const outcomes = await Promise.all(load);
    const after = await metrics();
    const unclean = outcomes.filter((o) => !clean(o));
    expect(unclean.map((o) => ({ status: o.status, broken: o.broken, done: o.done, body: o.body.slice(0, 200) }))).toEqual([]);
    const failed = outcomes.filter((o) => o.errors.length > 0);
    const finished = outcomes.filter((o) => o.errors.length === 0 && o.finish === 'length');
    process.stderr.write(`[figure] FFN 1 killed under 256 streams: ${finished.length} finished, ${failed.length} ended with an error event (all with [DONE])\n`);
    expect(failed.length + finished.length).toBe(256);
    expect(failed.length).toBeGreaterThan(0); // the kill hit streams in flight
    // The healthy block's streams were not cut: at least every request routed to it finished.
    expect(finished.length).toBeGreaterThanOrEqual(sample(after, 'afd:router_requests_total', 'backend="0"') - routed0);
    expect(failed.length).toBeLessThanOrEqual(sample(after, 'afd:router_requests_total', 'backend="1"') - routed1);
    expect(failed.every((o) => o.errors.every((e) => typeof e.message === 'string' && e.message.length > 0))).toBe(true);

    // The launch is alive and restarts the rank; the router takes block 1 back.
    expect(launch.child.exitCode).toBeNull();
    await until(async () => ((await (await fetch(`${launch.api}/health`)).json()) as { status: string }).status === 'ok', 'router /health ok again', 180_000);
    const m = await metrics();
    expect(sample(m, 'afd:rank_restarts_total', 'role="ffn",rank="1"')).toBe(1);
    expect(sample(m, 'afd:rank_restarts_total', 'role="ffn",rank="0"')).toBe(0);
    expect(launch.stderr()).toMatch(/restarting ffn rank 1 in 1\.0 s/);

    const r0 = sample(m, 'afd:router_requests_total', 'backend="0"');
    const r1 = sample(m, 'afd:router_requests_total', 'backend="1"');
    const fresh = await Promise.all(streams(32, 4));
    expect(fresh.filter((o) => !clean(o) || o.errors.length > 0 || o.finish !== 'length').map((o) => o.errors)).toEqual([]);
    const end = await metrics();
    expect(sample(end, 'afd:router_requests_total', 'backend="0"')).toBeGreaterThan(r0);
    expect(sample(end, 'afd:router_requests_total', 'backend="1"')).toBeGreaterThan(r1);
    expect(sample(end, 'vllm:request_success_total', 'finished_reason="error"')).toBeGreaterThan(0); // the failed ones counted as errors
    await until(idle, 'running requests and KV usage back to 0 after the fault', 30_000);
  });
});
