/**
 * A hung FFN rank under load (real processes: `afd-agent launch` 2A2F, CPU, the small
 * serving model, behind its front router). Clients keep requests going, plain and
 * streamed; FFN rank 1 is stopped with SIGSTOP (no EOF, no reset: only the step deadline
 * tells). Once attention 1's step has failed at the deadline, its block answers 503 with
 * Retry-After (never 500) until it is healthy again, and every request that starts after
 * that succeeds through the router: the router retries a refused request on block 0 before
 * anything reached the client. Plain requests that started during the hang succeed too (they
 * had no token when the step failed: a retryable 503). After SIGCONT the block serves again.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isAlive } from '../testing/AgentProcess.js';
import { startLaunch, type StartedLaunch } from '../testing/LaunchProcess.js';
import { makeServingModel } from '../testing/servingModel.js';
import { postStream } from '../testing/sseClient.js';
import { until as waitUntil } from '../testing/until.js';

const home = mkdtempSync(join(tmpdir(), 'afd-hung-ffn-'));
const stepDeadlineMs = 2000;
let launch: StartedLaunch;

beforeAll(async () => {
  const model = await makeServingModel(join(home, 'tiny-serving'));
  // Balanced by load alone: with prefix affinity the clients' few prompts could all stay on one block.
  launch = await startLaunch(['--topology', '2A2F', '--model', model, '--step-deadline-ms', String(stepDeadlineMs), '--no-router-prefix-affinity'], { home });
}, 300_000);

afterAll(async () => {
  const ffn1 = launch?.pids.get('ffn 1');
  if (ffn1 !== undefined && isAlive(ffn1)) process.kill(ffn1, 'SIGCONT');
  for (const pid of launch?.pids.values() ?? []) if (isAlive(pid)) process.kill(pid, 'SIGKILL');
  if (launch && launch.child.exitCode === null) launch.child.kill('SIGKILL');
  rmSync(home, { recursive: true, force: true });
});

/** One client request: when it started and ended (performance.now()), and how it went. */
interface Outcome {
  streamed: boolean;
  startMs: number;
  endMs: number;
  ok: boolean;
  /** Status and error, for the failure message. */
  what: string;
}

const body = (i: number, stream: boolean): object => ({ model: 'tiny-serving', prompt: [11, 12, 13, 14 + (i % 50)], max_tokens: 8, ignore_eos: true, stream });

/** A plain completion through the router: ok when 200 with its 8 tokens. */
async function plain(url: string, i: number): Promise<Outcome> {
  const startMs = performance.now();
  try {
    const res = await fetch(`${url}/v1/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body(i, false)) });
    const json = (await res.json()) as { choices?: { finish_reason: string }[]; error?: { code: string; message: string } };
    const ok = res.status === 200 && json.choices?.[0]?.finish_reason === 'length';
    return { streamed: false, startMs, endMs: performance.now(), ok, what: `${res.status} ${json.error ? `${json.error.code}: ${json.error.message}` : ''}` };
  } catch (err) {
    return { streamed: false, startMs, endMs: performance.now(), ok: false, what: `request failed: ${(err as Error).message}` };
  }
}

/** A streamed completion through the router: ok when 200, 8 tokens' events, no error event, [DONE]. */
async function streamed(url: string, i: number): Promise<Outcome> {
  const startMs = performance.now();
  const o = await postStream(`${url}/v1/completions`, body(i, true));
  const ok = o.status === 200 && o.done && o.broken === null && o.errors.length === 0 && o.finish === 'length';
  return { streamed: true, startMs, endMs: performance.now(), ok, what: `${o.status} ${o.broken ?? ''}${o.errors.map((e) => `${e.code}: ${e.message}`).join('; ')}${o.body}` };
}

/** Clients that each send one request after another until stopped. */
function startLoad(url: string, numPlain: number, numStreamed: number): { outcomes: Outcome[]; stop(): Promise<void> } {
  const outcomes: Outcome[] = [];
  let stopping = false;
  let i = 0;
  const client = async (send: typeof plain): Promise<void> => {
    while (!stopping) outcomes.push(await send(url, i++));
  };
  const clients = [...Array.from({ length: numPlain }, () => client(plain)), ...Array.from({ length: numStreamed }, () => client(streamed))];
  return {
    outcomes,
    async stop() {
      stopping = true;
      await Promise.all(clients);
    },
  };
}

const health = async (url: string): Promise<number> => (await fetch(`${url}/health`)).status;
const until = (cond: () => boolean | Promise<boolean>, what: string, ms: number): Promise<number> =>
  waitUntil(cond, what, ms, { pollMs: 20, explain: () => launch.stderr().slice(-3000) });
const failures = (list: Outcome[]): string => list.filter((o) => !o.ok).map((o) => `${o.streamed ? 'stream' : 'plain'} at +${o.startMs.toFixed(0)} ms: ${o.what}`).join('\n');

describe('a hung FFN rank under load (2A2F behind the front router)', () => {
  it('after the step deadline its block answers 503 + Retry-After and every new request succeeds through the router; SIGCONT brings the block back', { timeout: 90_000 }, async () => {
    const attn1 = launch.urls.get('attention 1')!;
    const ffn1 = launch.pids.get('ffn 1')!;
    expect(attn1).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    const t0 = performance.now();
    const load = startLoad(launch.api, 3, 2);
    try {
      await until(() => load.outcomes.length >= 10, 'ten requests served before the fault', 30_000);
      expect(failures(load.outcomes)).toBe('');

      const stoppedAt = performance.now();
      process.kill(ffn1, 'SIGSTOP');
      // Attention 1's step fails at the deadline; from then on its /health (and every new request) says 503.
      await until(async () => (await health(attn1)) === 503, "attention 1's /health 503 after the step deadline", stepDeadlineMs + 20_000);
      const failedAt = performance.now();
      expect(failedAt - stoppedAt).toBeGreaterThanOrEqual(stepDeadlineMs - 200); // the deadline told, nothing earlier

      // Asked directly, the failed block refuses with a retryable 503 that says why, plain or streamed (before any SSE).
      for (const stream of [false, true]) {
        const res = await fetch(`${attn1}/v1/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body(0, stream)) });
        expect(res.status).toBe(503);
        expect(Number(res.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
        const { error } = (await res.json()) as { error: { code: string; message: string } };
        expect(error.code).toBe('not_ready');
        expect(error.message).toMatch(/lost FFN rank 1 at 127\.0\.0\.1:\d+: .*reconnecting.*retry/);
      }

      await new Promise((r) => setTimeout(r, 3000)); // the load goes on against the failed block
      await load.stop();
      const after = load.outcomes.filter((o) => o.startMs >= failedAt);
      expect(after.length).toBeGreaterThanOrEqual(10);
      expect(failures(after), 'requests started after the step deadline failed').toBe('');
      // A plain request that started during the hang had no token when the step failed: retried, it succeeds too.
      const hangPlain = load.outcomes.filter((o) => !o.streamed && o.startMs >= stoppedAt && o.startMs < failedAt);
      expect(failures(hangPlain), 'plain requests started during the hang failed').toBe('');
      const lost = load.outcomes.filter((o) => !o.ok);
      process.stderr.write(
        `[figure] hung FFN 1 (step deadline ${stepDeadlineMs} ms): failed after ${(failedAt - stoppedAt).toFixed(0)} ms; ` +
          `${after.length} requests started after it, all ok; ${hangPlain.length} plain requests during the hang, all ok; ` +
          `${lost.length} failed of ${load.outcomes.length} (streams or requests already generating on block 1 at the fault)\n`,
      );
      // Only a request already under way on block 1 may fail: streamed, or started before the fault.
      for (const o of lost) expect(o.streamed || o.startMs < stoppedAt, o.what).toBe(true);
    } finally {
      await load.stop();
      process.kill(ffn1, 'SIGCONT');
    }

    // Healthy again: the link reconnects, /health says 200 and the block serves.
    await until(async () => (await health(attn1)) === 200, 'attention 1 healthy again after SIGCONT', 30_000);
    const res = await fetch(`${attn1}/v1/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body(1, false)) });
    expect(res.status).toBe(200);
    process.stderr.write(`[figure] hung-FFN test body: ${((performance.now() - t0) / 1000).toFixed(1)} s\n`);
  });
});
