/**
 * Launching real role processes through a real agent over its socket: colocated and 2A2F
 * on the CPU backend with the built-in model, readiness, logs, metrics, the front
 * router and its request log, a crashed rank reported with its exit status, and no process left after the
 * agent stops.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchSpecSchema, type AgentEvent, type LaunchSpecInput, type TopologyState } from '@afd/shared';
import type { AgentClient } from './AgentClient.js';
import { connectRecording, isAlive, pidsMentioning, startAgent, type StartedAgent } from '../testing/AgentProcess.js';
import { defaultServedModelName } from '../model/defaultModel.js';
import { until as waitUntil } from '../testing/until.js';

let agent: StartedAgent;
let client: AgentClient;
const events: AgentEvent[] = [];
const pids = new Set<number>();
let stopFailuresFrom: number | undefined;

beforeAll(async () => {
  agent = await startAgent();
  client = await connectRecording(agent, events, pids);
  await client.request('logs.subscribe', {});
  await client.request('metrics.subscribe', { intervalMs: 100 });
  expect(await client.request('requests.subscribe', {})).toEqual({ requests: [] });
});

afterAll(async () => {
  // SIGTERM the agent with the 2A2F ranks still running; the client stays connected and
  // sees the ranks exit (none failed: FFN ranks may leave on the shutdown flag).
  const code = await agent?.stop();
  if (stopFailuresFrom !== undefined) {
    // The agent has exited, but its last frames may not be processed here yet (no
    // expect.poll in a hook: a bounded wait, then the exact count).
    const during = (): AgentEvent[] => events.slice(stopFailuresFrom);
    const exits = (): number => during().filter((e) => e.type === 'rank.exited').length;
    const t0 = Date.now();
    while (exits() < 4 && Date.now() - t0 < 15_000) await new Promise((r) => setTimeout(r, 50));
    expect(exits()).toBe(4);
    expect(during().filter((e) => e.type === 'rank.failed')).toEqual([]);
  }
  await client?.close();
  // The agent's SIGTERM path stops every rank: nothing it started may survive it.
  const t0 = Date.now();
  while ([...pids].some(isAlive) && Date.now() - t0 < 10_000) await new Promise((r) => setTimeout(r, 50));
  expect([...pids].filter(isAlive)).toEqual([]);
  expect(pidsMentioning(agent.script)).toEqual([]);
  expect(code).toBe(0);
});

function state(): TopologyState | undefined {
  return events.filter((e): e is Extract<AgentEvent, { type: 'topology.state' }> => e.type === 'topology.state').at(-1)?.state;
}

const until = (cond: () => boolean, what: string, ms = 90_000): Promise<number> =>
  waitUntil(cond, what, ms, { pollMs: 50, explain: () => `last state: ${JSON.stringify(state()?.ranks.map((r) => [r.role, r.rank, r.state, r.message]))}` });

async function launch(launchId: string, spec: LaunchSpecInput): Promise<number> {
  events.length = 0;
  const res = await client.request('topology.launch', { launchId, agentId: 'local', spec: launchSpecSchema.parse(spec) });
  return res.numRanks;
}

describe('launching through the agent socket', { timeout: 180_000 }, () => { // real processes on a loaded 2-core CI box
  it('launches a colocated rank: started, progress, ready, router and its request log, logs, metrics', async () => {
    const n = await launch('col-1', { mode: 'colocated', apiPort: 0, placements: [{ role: 'colocated', rank: 0, agentId: 'local', backend: 'cpu' }] });
    expect(n).toBe(1);
    await until(() => state()?.state === 'running', 'colocated running');
    const kinds = new Set(events.map((e) => e.type));
    for (const k of ['rank.started', 'rank.progress', 'rank.ready', 'topology.state'] as const) expect(kinds.has(k), k).toBe(true);
    const s = state()!;
    expect(s.routerUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(s.apiKeyRequired).toBe(false);
    const models = (await (await fetch(`${s.routerUrl}/v1/models`)).json()) as { data: { id: string }[] };
    expect(models.data.length).toBeGreaterThan(0);
    // The router logged the request: streamed to subscribers, its bodies on request.
    await until(() => events.some((e) => e.type === 'requests.logged'), 'a requests.logged event', 10_000);
    const logged = events.flatMap((e) => (e.type === 'requests.logged' ? e.requests : []));
    expect(logged).toEqual([expect.objectContaining({ method: 'GET', endpoint: '/v1/models', status: 200, backend: 0, error: null })]);
    const detail = await client.request('requests.get', { id: logged[0]!.id });
    expect(JSON.parse(detail.responseBody)).toEqual(models);
    await expect(client.request('requests.get', { id: 999_999 })).rejects.toMatchObject({ code: 'not-found' });
    await until(() => events.some((e) => e.type === 'metrics.snapshot'), 'a metrics snapshot', 10_000);
    // ~10 Hz per rank: count snapshots over three seconds (loose bounds: a loaded 2-core CI
    // box delays the rank's stats polls; the lower bound only rules out a stalled stream).
    const before = events.filter((e) => e.type === 'metrics.snapshot').length;
    await new Promise((r) => setTimeout(r, 3000));
    const perSecond = (events.filter((e) => e.type === 'metrics.snapshot').length - before) / 3;
    expect(perSecond).toBeGreaterThanOrEqual(2);
    expect(perSecond).toBeLessThanOrEqual(11);
    await until(() => events.some((e) => e.type === 'log.lines'), 'streamed log lines', 10_000);
    const logs = await client.request('logs.get', { role: 'colocated', rank: 0, tail: 50 });
    expect(logs.lines.length).toBeGreaterThan(0);
    // A second launch while running is refused.
    const again = launchSpecSchema.parse({ mode: 'colocated', placements: [{ role: 'colocated', rank: 0, agentId: 'local', backend: 'cpu' }] });
    await expect(client.request('topology.launch', { launchId: 'col-2', agentId: 'local', spec: again })).rejects.toMatchObject({ code: 'busy' });
  });

  it('reports a killed rank as failed with its exit status and last log lines, then restarts it', async () => {
    const rank = state()!.ranks[0]!;
    expect(rank.pid).toBeGreaterThan(0);
    process.kill(rank.pid!, 'SIGKILL');
    await until(() => events.some((e) => e.type === 'rank.failed'), 'rank.failed', 15_000);
    const failed = events.find((e): e is Extract<AgentEvent, { type: 'rank.failed' }> => e.type === 'rank.failed')!;
    expect(failed).toMatchObject({ role: 'colocated', rank: 0, exitCode: null, signal: 'SIGKILL' });
    expect(failed.message).toMatch(/killed by SIGKILL/);
    expect(failed.lastLogLines.length).toBeGreaterThan(0);
    await until(() => state()?.state === 'failed', 'topology failed');
    expect(state()!.ranks[0]).toMatchObject({ state: 'failed', exitCode: null });
    // Restart relaunches the same spec under the same launch id.
    const oldPid = rank.pid;
    events.length = 0;
    expect(await client.request('topology.restart', {})).toEqual({ launchId: 'col-1' });
    await until(() => state()?.state === 'running', 'running again after restart');
    expect(state()!.ranks[0]!.pid).not.toBe(oldPid);
    // Generous grace: a rank SIGKILLed past it on a loaded CI box would not read 'exited'.
    expect((await client.request('topology.stop', { graceMs: 10_000 })).stopped).toBe(true);
    expect(state()!.state).toBe('stopped');
    expect(state()!.ranks[0]!.state).toBe('exited');
  });

  it('reports a rank that exits on its own with its exit code and the role message', async () => {
    await launch('bad-model', { mode: 'colocated', model: { dir: '/nonexistent/model' }, apiPort: 0, placements: [{ role: 'colocated', rank: 0, agentId: 'local', backend: 'cpu' }] });
    await until(() => events.some((e) => e.type === 'rank.failed'), 'rank.failed', 60_000);
    const failed = events.find((e): e is Extract<AgentEvent, { type: 'rank.failed' }> => e.type === 'rank.failed')!;
    expect(failed.exitCode).toBe(1);
    expect(failed.signal).toBeNull();
    expect(failed.message).toMatch(/exited with code 1: .*nonexistent/);
    await client.request('topology.stop', { graceMs: 2000 });
  });

  it('launches 2A2F on the CPU backend and sees every rank ready', async (ctx) => {
    await launch('afd-2a2f', {
      mode: 'afd',
      topology: '2A2F',
      apiPort: 0,
      placements: [
        { role: 'ffn', rank: 0, agentId: 'local', backend: 'cpu', threads: 1 },
        { role: 'ffn', rank: 1, agentId: 'local', backend: 'cpu', threads: 1 },
        { role: 'attention', rank: 0, agentId: 'local', backend: 'cpu', threads: 1 },
        { role: 'attention', rank: 1, agentId: 'local', backend: 'cpu', threads: 1 },
      ],
    });
    await until(() => state()?.state === 'running' || state()?.state === 'failed', '2A2F running or failed', 180_000);
    const failed = events.find((e): e is Extract<AgentEvent, { type: 'rank.failed' }> => e.type === 'rank.failed');
    if (failed && /does not include yet|not implemented/i.test(`${failed.message} ${failed.lastLogLines.join(' ')}`)) {
      await client.request('topology.stop', { graceMs: 2000 });
      ctx.skip(`afd-agent role attention/ffn is not implemented in this build yet: ${failed.message}`);
    }
    expect(failed, failed ? `${failed.message}\n${failed.lastLogLines.join('\n')}` : '').toBeUndefined();
    const s = state()!;
    expect(s.ranks.map((r) => `${r.role}${r.rank}:${r.state}`).sort()).toEqual(['attention0:ready', 'attention1:ready', 'ffn0:ready', 'ffn1:ready']);
    expect(s.routerUrl).not.toBeNull();
    const res = await fetch(`${s.routerUrl}/v1/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: defaultServedModelName(), prompt: 'hello', max_tokens: 4, temperature: 0 }),
    });
    expect(res.status).toBe(200);
    // Leave it running: the agent's shutdown must stop it (checked in afterAll), and no rank
    // may be reported failed while the topology stops (FFN ranks leave on the shutdown flag).
    stopFailuresFrom = events.length;
  }, 240_000);
});
