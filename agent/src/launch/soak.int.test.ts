/**
 * A bounded soak of `afd-agent launch` (2A2F, CPU, the small serving model, real processes):
 * for about a minute, clients stream, abort mid-stream, send bad bodies and plain
 * completions through the front router, while one FFN rank is SIGKILLed (the launch
 * restarts it) and later the other is SIGSTOPped past the step deadline and resumed.
 * The memory (RSS) of every rank is sampled throughout. Afterwards: no request was left
 * hanging, every stream ended with [DONE] (tokens or an error event) or was refused for now
 * (503 / 429 with Retry-After, while no block could take it), every bad body got a 4xx,
 * each surviving rank's RSS at the end is at most 5 % over the most it held during a 15 s
 * warm-up with the same mix, and no request or KV block is left on either attention rank.
 * The summary line says what it did. Bounded: about 2 minutes on a 2-core box.
 */
import { readFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isAlive } from '../testing/AgentProcess.js';
import { startLaunch, type StartedLaunch } from '../testing/LaunchProcess.js';
import { makeServingModel } from '../testing/servingModel.js';
import { postStream } from '../testing/sseClient.js';
import { until as waitUntil } from '../testing/until.js';

const home = mkdtempSync(join(tmpdir(), 'afd-soak-'));
const DEADLINE_MS = 2_000;
const SOAK_MS = 60_000;
const CLIENTS = 24;
let launch: StartedLaunch;

beforeAll(async () => {
  const model = await makeServingModel(join(home, 'm'));
  launch = await startLaunch(['--topology', '2A2F', '--model', model, '--max-model-len', '256', '--step-deadline-ms', String(DEADLINE_MS), '--stop-grace-ms', '5000'], { home });
}, 300_000);

afterAll(async () => {
  for (const pid of launch?.pids.values() ?? []) if (isAlive(pid)) process.kill(pid, 'SIGCONT');
  if (launch) await launch.term();
  rmSync(home, { recursive: true, force: true });
});

/** Resident set of a process in bytes (null once it is gone). */
function rss(pid: number): number | null {
  try {
    const m = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) * 1024 : null;
  } catch {
    return null;
  }
}

function sample(text: string, name: string, labels: string): number {
  const line = text.split('\n').find((l) => l.startsWith(`${name}{`) && labels.split(',').every((kv) => l.includes(kv)));
  return line ? Number(line.slice(line.lastIndexOf(' ') + 1)) : 0;
}

const metrics = (): Promise<string> => fetch(`${launch.api}/metrics`).then((r) => r.text());

async function idle(): Promise<boolean> {
  const m = await metrics();
  return [0, 1].every((b) => ['vllm:num_requests_running', 'vllm:num_requests_waiting', 'vllm:kv_cache_usage_perc'].every((n) => sample(m, n, `backend="${b}"`) === 0));
}

const until = (cond: () => Promise<boolean>, what: string, ms: number): Promise<number> => waitUntil(cond, what, ms, { explain: async () => launch.stderr().slice(-3000) });

interface Tally {
  streams: number;
  finished: number;
  errorEvents: number;
  aborted: number;
  plain: number;
  plainFailed: number;
  bad: number;
  /** Requests refused for now (503 / 429 with an error body) while no rank could take them. */
  refused: number;
  unclean: string[];
}

/** A refusal for now: 503 or 429 with an OpenAI error body and Retry-After. */
function refusedForNow(status: number, body: string, retryAfter: string | null): boolean {
  return (status === 503 || status === 429) && /"error"/.test(body) && retryAfter !== null;
}

const BAD_BODIES: { body: string; type: string }[] = [
  { body: '{"model": "m", "prompt": [1, 2', type: 'application/json' }, // cut JSON
  { body: '{"model": "m", "prompt": "hi", "max_tokens": 1}', type: 'text/plain' }, // not JSON by type
  { body: '{"model": "m", "prompt": [1, 2], "max_tokens": 100000}', type: 'application/json' }, // over the window
  { body: '{"model": "m", "prompt": [1, 2], "frobnicate": true}', type: 'application/json' }, // unknown field
  { body: `{"model": "m", "prompt": ${'['.repeat(5000)}${']'.repeat(5000)}}`, type: 'application/json' }, // deep
  { body: '', type: 'application/json' }, // empty
];

/** One client's loop until `end`: a random mix of the four kinds of request. */
async function client(id: number, end: number, t: Tally): Promise<void> {
  let n = 0;
  while (Date.now() < end) {
    n++;
    const kind = (id + n) % 8;
    const prompt = [100 + ((id * 7 + n) % 200), 5, 6, 7 + (n % 30)];
    const timeout = AbortSignal.timeout(60_000); // a request that hangs this long is a failure
    if (kind < 4) {
      t.streams++;
      const o = await postStream(`${launch.api}/v1/completions`, { model: 'm', prompt, max_tokens: 16 + (n % 48), ignore_eos: true, stream: true }, {}, { signal: timeout });
      if (o.status === 200 && o.done && o.broken === null) {
        if (o.errors.length > 0) t.errorEvents++;
        else t.finished++;
      } else if (refusedForNow(o.status, o.body, o.retryAfter)) t.refused++;
      else t.unclean.push(`stream: status ${o.status}, done ${o.done}, broken ${o.broken}, ${o.body.slice(0, 200)}`);
    } else if (kind < 6) {
      t.streams++;
      const leave = new AbortController();
      const timer = setTimeout(() => leave.abort(), 30 + ((id * 13 + n * 17) % 250));
      const o = await postStream(`${launch.api}/v1/completions`, { model: 'm', prompt, max_tokens: 200, ignore_eos: true, stream: true }, {}, { signal: AbortSignal.any([leave.signal, timeout]) });
      clearTimeout(timer);
      if (leave.signal.aborted && !timeout.aborted) t.aborted++;
      else if (o.status === 200 && o.done) t.finished++;
      else if (refusedForNow(o.status, o.body, o.retryAfter)) t.refused++;
      else t.unclean.push(`aborted stream: status ${o.status}, broken ${o.broken}`);
    } else if (kind === 6) {
      const bad = BAD_BODIES[(id + n) % BAD_BODIES.length]!;
      const r = await fetch(`${launch.api}/v1/completions`, { method: 'POST', headers: { 'content-type': bad.type }, body: bad.body, signal: timeout }).catch((e: Error) => e);
      if (r instanceof Error) t.unclean.push(`bad body: ${r.message}`);
      else {
        const text = await r.text();
        if (r.status >= 400 && r.status < 500 && /"error"/.test(text)) t.bad++;
        else if (refusedForNow(r.status, text, r.headers.get('retry-after'))) t.refused++;
        else t.unclean.push(`bad body ${bad.body.slice(0, 40)}: status ${r.status} ${text.slice(0, 200)}`);
      }
    } else {
      t.plain++;
      const r = await fetch(`${launch.api}/v1/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'm', prompt, max_tokens: 8 }), signal: timeout }).catch((e: Error) => e);
      if (r instanceof Error) t.unclean.push(`completion: ${r.message}`);
      else {
        const text = await r.text();
        if (refusedForNow(r.status, text, r.headers.get('retry-after'))) t.refused++;
        else if (r.status !== 200) t.plainFailed++;
        if (!/"(choices|error)"/.test(text)) t.unclean.push(`completion: status ${r.status} ${text.slice(0, 200)}`);
      }
    }
  }
}

describe('a 2A2F launch soaked with mixed load and faults', { timeout: 300_000 }, () => {
  it('leaves no request hanging, no KV block used, and no rank grown by more than 5 %', async () => {
    const ranks = [...launch.pids.entries()];
    expect(ranks.map(([name]) => name).sort()).toEqual(['attention 0', 'attention 1', 'ffn 0', 'ffn 1']);
    // Warm up with the same mix (heaps and caches reach their working size); the base of each
    // rank is the most it held during the warm-up, a leak grows past it.
    const peak = new Map(ranks.map(([name, pid]) => [name, rss(pid)!]));
    const sampler = setInterval(() => {
      for (const [name, pid] of ranks) {
        const v = rss(pid);
        if (v !== null) peak.set(name, Math.max(peak.get(name)!, v));
      }
    }, 250);
    await Promise.all(Array.from({ length: CLIENTS }, (_, i) => client(i, Date.now() + 15_000, { streams: 0, finished: 0, errorEvents: 0, aborted: 0, plain: 0, plainFailed: 0, bad: 0, refused: 0, unclean: [] })));
    await until(idle, 'idle after the warm-up', 30_000);
    const base = new Map(peak);

    const t: Tally = { streams: 0, finished: 0, errorEvents: 0, aborted: 0, plain: 0, plainFailed: 0, bad: 0, refused: 0, unclean: [] };
    const t0 = Date.now();
    const load = Promise.all(Array.from({ length: CLIENTS }, (_, i) => client(i, t0 + SOAK_MS, t)));
    const faults = (async () => {
      await new Promise((r) => setTimeout(r, 10_000));
      process.kill(launch.pids.get('ffn 1')!, 'SIGKILL');
      await until(async () => ((await (await fetch(`${launch.api}/health`)).json()) as { status: string }).status === 'ok', 'the killed block back', 120_000);
      const stopped = launch.pids.get('ffn 0')!;
      process.kill(stopped, 'SIGSTOP');
      await new Promise((r) => setTimeout(r, DEADLINE_MS * 2));
      process.kill(stopped, 'SIGCONT');
    })();
    await Promise.all([load, faults]);
    const soakS = (Date.now() - t0) / 1e3;
    await until(idle, 'no running or waiting request and no KV block in use on either attention rank', 60_000);
    clearInterval(sampler);

    const growth = ranks
      .filter(([name]) => name !== 'ffn 1') // killed and restarted: a new process
      .map(([name, pid]) => ({ name, pct: ((rss(pid)! - base.get(name)!) / base.get(name)!) * 100, peakPct: ((peak.get(name)! - base.get(name)!) / base.get(name)!) * 100 }));
    const m = await metrics();
    process.stderr.write(
      `[soak] ${soakS.toFixed(0)} s, ${CLIENTS} clients: ${t.streams} streams (${t.finished} finished, ${t.errorEvents} ended with an error event, ${t.aborted} aborted by the client), ` +
        `${t.plain} completions (${t.plainFailed} failed), ${t.bad} bad bodies refused with a 4xx, ${t.refused} requests refused for now (503/429 with Retry-After); FFN 1 killed and restarted ` +
        `(restarts ${sample(m, 'afd:rank_restarts_total', 'role="ffn",rank="1"')}), FFN 0 stopped ${(DEADLINE_MS * 2) / 1e3} s; ` +
        `RSS growth ${growth.map((g) => `${g.name} ${g.pct.toFixed(1)}% (peak ${g.peakPct.toFixed(1)}%)`).join(', ')}; KV back to 0\n`,
    );
    expect(t.unclean).toEqual([]);
    expect(t.finished).toBeGreaterThan(100);
    expect(t.aborted).toBeGreaterThan(20);
    expect(t.bad).toBeGreaterThan(20);
    expect(sample(m, 'afd:rank_restarts_total', 'role="ffn",rank="1"')).toBe(1);
    for (const g of growth) expect(g.pct, g.name).toBeLessThanOrEqual(5);
  });
});
