/**
 * SIGTERM drains `afd-agent launch` (real processes: 2A2F, CPU, the small serving model),
 * with one FFN rank hung by SIGSTOP: new requests get 503 and /health says draining,
 * streams that finish within the grace period finish, the rest end with an SSE error
 * event and [DONE] (never a cut socket), and the whole stop, hung rank included, takes at
 * most the grace period + 1 s. No process is left.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isAlive, pidsMentioning } from '../testing/AgentProcess.js';
import { startLaunch, type StartedLaunch } from '../testing/LaunchProcess.js';
import { makeServingModel } from '../testing/servingModel.js';
import { postStream, type StreamOutcome } from '../testing/sseClient.js';
import { until as waitUntil } from '../testing/until.js';

const home = mkdtempSync(join(tmpdir(), 'afd-drain-'));
const graceMs = 4000; // under the 5 s step deadline: the hung block's streams are still hung when the grace ends
let launch: StartedLaunch;

beforeAll(async () => {
  const model = await makeServingModel(join(home, 'tiny-serving'));
  // Balanced by load alone: with prefix affinity the streams' one prompt would keep them all on one block, perhaps the hung one.
  launch = await startLaunch(['--topology', '2A2F', '--model', model, '--stop-grace-ms', String(graceMs), '--no-router-prefix-affinity'], { home });
}, 300_000);

afterAll(async () => {
  for (const pid of launch?.pids.values() ?? []) if (isAlive(pid)) process.kill(pid, 'SIGKILL');
  if (launch && launch.child.exitCode === null) launch.child.kill('SIGKILL');
  rmSync(home, { recursive: true, force: true });
});

/** A streamed completion through the router; `started` once its first event arrived. */
function stream(maxTokens: number): { started: boolean; done: Promise<StreamOutcome> } {
  const s = { started: false, done: undefined as unknown as Promise<StreamOutcome> };
  s.done = postStream(`${launch.api}/v1/completions`, { model: 'tiny-serving', prompt: [11, 12, 13, 14], max_tokens: maxTokens, ignore_eos: true, stream: true }, {}, { onEvent: () => (s.started = true) });
  return s;
}

const until = (cond: () => boolean | Promise<boolean>, what: string, ms: number): Promise<number> =>
  waitUntil(cond, what, ms, { pollMs: 20, explain: () => launch.stderr().slice(-3000) });

describe('SIGTERM on a launch', () => {
  it('drains: refuses new work, lets short streams finish, ends the rest cleanly, stops within grace + 1 s with a hung FFN', { timeout: 300_000 }, async () => {
    const long = Array.from({ length: 8 }, () => stream(30_000));
    await until(() => long.every((s) => s.started), 'the 8 long streams streaming', 60_000);
    const short = Array.from({ length: 4 }, () => stream(100));
    await until(() => short.every((s) => s.started), 'the short streams streaming', 60_000);
    // Hung, then at once TERM (well inside the 5 s step deadline): no EOF, no reset, block 1 stalls.
    process.kill(launch.pids.get('ffn 1')!, 'SIGSTOP');
    const t0 = performance.now();
    launch.child.kill('SIGTERM');
    // Draining: a new request is refused with 503 (a GET: it cannot stall on the hung block), and /health says so.
    let refused: Response | undefined;
    await until(async () => {
      const r = await fetch(`${launch.api}/v1/models`);
      if (r.status === 503) refused = r;
      else await r.text();
      return refused !== undefined;
    }, 'a 503 for a new request', 5000);
    expect(((await refused!.json()) as { error: { code: string } }).error.code).toBe('draining');
    const health = await fetch(`${launch.api}/health`);
    expect(health.status).toBe(503);
    expect(((await health.json()) as { status: string }).status).toBe('draining');

    const code = await launch.exited;
    const tookMs = performance.now() - t0;
    process.stderr.write(`[figure] SIGTERM to exit with FFN 1 SIGSTOPped and 12 streams in flight: ${tookMs.toFixed(0)} ms (grace ${graceMs} ms)\n`);
    expect(code).toBe(0);
    expect(tookMs).toBeLessThanOrEqual(graceMs + 1000);

    const all = [...(await Promise.all(long.map((s) => s.done))), ...(await Promise.all(short.map((s) => s.done)))];
    for (const o of all) {
      expect(o.status).toBe(200);
      expect(o.broken).toBeNull();
      expect(o.done).toBe(true);
    }
    // The long ones could not finish: one error event (the drain's, or on the hung block the
    // step deadline's if a loaded box got there first), then [DONE].
    for (const o of all.slice(0, 8)) {
      expect(o.errors).toHaveLength(1);
      expect(['shutting_down', 'engine_error']).toContain(o.errors[0]!.code);
    }
    expect(all.slice(0, 8).some((o) => o.errors[0]!.code === 'shutting_down')).toBe(true);
    // Short streams on the healthy block finished within the grace period; those on the hung one were ended.
    const shorts = all.slice(8);
    expect(shorts.filter((o) => o.finish === 'length' && o.errors.length === 0).length).toBeGreaterThan(0);
    for (const o of shorts) expect(o.finish === 'length' || o.errors.length === 1).toBe(true);

    expect(launch.stderr()).toMatch(/all ranks stopped/);
    expect([...launch.pids.values()].filter(isAlive)).toEqual([]); // the stopped FFN too (SIGKILL)
    expect(pidsMentioning(launch.script)).toEqual([]);
  });
});
