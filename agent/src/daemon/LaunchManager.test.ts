/**
 * LaunchManager with a scripted role program (speaks the role contract, records the
 * order in which ranks receive SIGTERM): request errors, the busy rule, the stop (every
 * rank at once), restart, and logs.get.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { launchSpecSchema, type AgentEvent } from '@afd/shared';
import { LaunchManager } from './LaunchManager.js';
import { until as waitUntil } from '../testing/until.js';

let dir = '';
let script = '';
let stopLog = '';
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'afd-lm-'));
  script = join(dir, 'fake-role.cjs');
  stopLog = join(dir, 'stops.log');
  // argv: [node, script, 'role', <role>, '--rank-config', <json>]
  writeFileSync(
    script,
    `const http = require('node:http'); const fs = require('node:fs');
const role = process.argv[3]; const rank = JSON.parse(process.argv[process.argv.indexOf('--rank-config') + 1]).afd.rank;
const out = (e) => process.stdout.write(JSON.stringify(e) + '\\n');
console.error(JSON.stringify({ level: 30, msg: role + ' ' + rank + ' up' }));
const server = http.createServer((req, res) => { res.writeHead(req.url === '/health' ? 200 : 404); res.end('{"status":"ok"}'); });
server.listen(0, '127.0.0.1', () => { out({ type: 'listening', apiUrl: 'http://127.0.0.1:' + server.address().port }); out({ type: 'ready' }); });
process.on('SIGTERM', () => { fs.appendFileSync(${JSON.stringify(stopLog)}, role + rank + '\\n'); setTimeout(() => process.exit(0), role === 'attention' ? 150 : 0); });
`,
  );
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const spec = launchSpecSchema.parse({
  mode: 'afd',
  topology: '2A1F',
  placements: [
    { role: 'ffn', rank: 0, agentId: 'me', backend: 'cpu' },
    { role: 'attention', rank: 0, agentId: 'me', backend: 'cpu' },
    { role: 'attention', rank: 1, agentId: 'me', backend: 'cpu' },
  ],
  apiPort: 0,
});

const until = (cond: () => boolean, ms = 20_000): Promise<number> => waitUntil(cond, 'the condition', ms, { pollMs: 20 });

describe('LaunchManager', () => {
  it('refuses a launch with no placement for this agent', async () => {
    const m = new LaunchManager({ self: { file: process.execPath, args: [script] } });
    await expect(m.launch({ launchId: 'l', agentId: 'someone-else', spec })).rejects.toMatchObject({ code: 'bad-request', message: /no placement has agentId "someone-else"/ });
    expect(m.state().state).toBe('idle');
    await expect(m.restart()).rejects.toMatchObject({ code: 'not-found' });
  });

  it('runs, refuses a second launch, stops every rank at once, restarts, and serves logs', async () => {
    const m = new LaunchManager({ self: { file: process.execPath, args: [script] } });
    const events: AgentEvent[] = [];
    m.onEvent((e) => events.push(e));
    expect(await m.launch({ launchId: 'l1', agentId: 'me', spec })).toEqual({ launchId: 'l1', numRanks: 3 });
    await until(() => m.state().state === 'running');
    expect(m.state().ranks.map((r) => `${r.role}${r.rank}`)).toEqual(['ffn0', 'attention0', 'attention1']);
    await expect(m.launch({ launchId: 'l2', agentId: 'me', spec })).rejects.toMatchObject({ code: 'busy' });
    await until(() => m.logs('ffn', 0, 10).some((l) => l.text === 'ffn 0 up'));
    expect(m.logs('ffn', 0, 10).find((l) => l.text === 'ffn 0 up')).toMatchObject({ stream: 'stderr', level: 'info' });
    expect(() => m.logs('ffn', 5, 10)).toThrow(/ffn rank 5 does not run on this agent/);

    expect(await m.stop(5000)).toEqual({ stopped: true });
    const order = readFileSync(stopLog, 'utf8').trim().split('\n');
    // In parallel: the FFN rank (which exits at once) got SIGTERM before the attention ranks were done (150 ms).
    expect([...order].sort()).toEqual(['attention0', 'attention1', 'ffn0']);
    const exits = events.flatMap((e) => (e.type === 'rank.exited' ? [`${e.role}${e.rank}`] : []));
    expect(exits[0]).toBe('ffn0');
    expect(m.state().state).toBe('stopped');
    expect(events.filter((e) => e.type === 'rank.exited')).toHaveLength(3);
    expect(events.some((e) => e.type === 'rank.failed')).toBe(false);

    expect(await m.restart()).toEqual({ launchId: 'l1' });
    await until(() => m.state().state === 'running');
    expect(await m.stop(5000)).toEqual({ stopped: true });
    expect(await m.stop(5000)).toEqual({ stopped: false });
  });

  it('restart on-failure: a killed rank comes back after its back-off while the launch stays running; past maxRestarts it fails', async () => {
    const m = new LaunchManager({ self: { file: process.execPath, args: [script] } });
    const events: AgentEvent[] = [];
    m.onEvent((e) => events.push(e));
    const policy = launchSpecSchema.parse({ ...spec, restart: { policy: 'on-failure', maxRestarts: 1, backoffMs: 300 } });
    await m.launch({ launchId: 'rs', agentId: 'me', spec: policy });
    await until(() => m.state().state === 'running');
    const ffn = (): NonNullable<ReturnType<typeof m.state>['ranks'][number]> => m.state().ranks.find((r) => r.role === 'ffn')!;
    const first = ffn().pid!;
    process.kill(first, 'SIGKILL');
    await until(() => ffn().state === 'failed');
    expect(m.state().state).toBe('running'); // degraded, not failed: a restart is on its way
    expect(m.state().message).toMatch(/restarting ffn rank 0 \(back-off, restart 1 in a row\)/);
    await until(() => ffn().state === 'ready' && ffn().pid !== first);
    expect(ffn().restarts).toBe(1);
    expect(m.state().state).toBe('running');
    expect(m.state().message).toBeUndefined();
    expect(events.filter((e) => e.type === 'rank.started' && e.role === 'ffn')).toHaveLength(2);
    // Killed again before a minute of being ready: the second failure in a row is one too many.
    process.kill(ffn().pid!, 'SIGKILL');
    await until(() => m.state().state === 'failed');
    expect(ffn().restarts).toBe(1);
    await m.stop(5000);
  });

  it('setRestartPolicy: changes a running launch live (topology.state shows it); never makes the next death a failure; unknown launches are refused', async () => {
    const m = new LaunchManager({ self: { file: process.execPath, args: [script] } });
    const events: AgentEvent[] = [];
    m.onEvent((e) => events.push(e));
    expect(() => m.setRestartPolicy({ launchId: 'sw', policy: 'never' })).toThrow(expect.objectContaining({ code: 'not-found', message: 'no launch sw on this agent: nothing was launched here yet' }));
    const onFailure = launchSpecSchema.parse({ ...spec, restart: { policy: 'on-failure', maxRestarts: 5, backoffMs: 200 } });
    await m.launch({ launchId: 'sw', agentId: 'me', spec: onFailure });
    await until(() => m.state().state === 'running');
    expect(() => m.setRestartPolicy({ launchId: 'other', policy: 'never' })).toThrow(expect.objectContaining({ code: 'not-found', message: 'no launch other on this agent: it runs launch sw (running)' }));

    const before = events.length;
    expect(m.setRestartPolicy({ launchId: 'sw', policy: 'never', maxRestarts: 2 })).toEqual({ launchId: 'sw', restart: { policy: 'never', maxRestarts: 2, backoffMs: 200, maxBackoffMs: 30_000 } });
    const pushed = events.slice(before).find((e) => e.type === 'topology.state');
    expect(pushed?.type === 'topology.state' && pushed.state.spec?.restart).toEqual({ policy: 'never', maxRestarts: 2, backoffMs: 200, maxBackoffMs: 30_000 });
    expect(m.state().spec?.restart.policy).toBe('never');

    // Off: a killed rank is not restarted and the launch fails.
    const ffn = (): NonNullable<ReturnType<typeof m.state>['ranks'][number]> => m.state().ranks.find((r) => r.role === 'ffn')!;
    const first = ffn().pid!;
    process.kill(first, 'SIGKILL');
    await until(() => m.state().state === 'failed');
    await new Promise((r) => setTimeout(r, 600)); // three back-offs' worth: still nothing restarted
    expect(ffn()).toMatchObject({ state: 'failed', pid: first }); // the dead process, not a new one
    expect(ffn().restarts).toBeUndefined();
    expect(events.filter((e) => e.type === 'rank.started' && e.role === 'ffn')).toHaveLength(1);

    // topology.restart relaunches with the policy now in effect; on again, a death is restarted.
    await m.restart();
    await until(() => m.state().state === 'running');
    expect(m.state().spec?.restart).toMatchObject({ policy: 'never', maxRestarts: 2 });
    expect(m.setRestartPolicy({ launchId: 'sw', policy: 'on-failure' }).restart).toMatchObject({ policy: 'on-failure', maxRestarts: 2 });
    const second = ffn().pid!;
    process.kill(second, 'SIGKILL');
    await until(() => ffn().state === 'ready' && ffn().pid !== second && ffn().pid !== null);
    expect(ffn().restarts).toBe(1);
    expect(m.state().state).toBe('running');

    await m.stop(5000);
    expect(() => m.setRestartPolicy({ launchId: 'sw', policy: 'on-failure' })).toThrow(expect.objectContaining({ code: 'bad-request', message: expect.stringMatching(/^launch sw is stopped on this agent/) }));
  });

  it('setRestartPolicy to never cancels a restart waiting out its back-off: the rank stays failed', async () => {
    const m = new LaunchManager({ self: { file: process.execPath, args: [script] } });
    await m.launch({ launchId: 'bo', agentId: 'me', spec: launchSpecSchema.parse({ ...spec, restart: { policy: 'on-failure', backoffMs: 60_000, maxBackoffMs: 60_000 } }) });
    await until(() => m.state().state === 'running');
    const ffn = m.state().ranks.find((r) => r.role === 'ffn')!;
    process.kill(ffn.pid!, 'SIGKILL');
    await until(() => m.state().ranks.find((r) => r.role === 'ffn')!.state === 'failed');
    expect(m.state()).toMatchObject({ state: 'running', message: expect.stringMatching(/restarting ffn rank 0 \(back-off/) });
    m.setRestartPolicy({ launchId: 'bo', policy: 'never' });
    expect(m.state().state).toBe('failed');
    expect(m.state().message).toBeUndefined();
    await m.stop(5000);
  });

  it('refuses to serve the OpenAI API off loopback without an API key', async () => {
    const m = new LaunchManager({ self: { file: process.execPath, args: [script] }, routerHost: '0.0.0.0', startRouter: async () => { throw new Error('not reached'); } });
    await expect(m.launch({ launchId: 'k', agentId: 'me', spec })).rejects.toMatchObject({ code: 'launch-failed', message: /non-loopback address 0\.0\.0\.0 without an API key/ });
  });

  it('starts the front router over the attention ranks once they are ready, and reports a router failure', async () => {
    let backends: string[] = [];
    const ok = new LaunchManager({
      self: { file: process.execPath, args: [script] },
      startRouter: async (urls, host, port) => {
        backends = urls;
        return { url: `http://${host}:${port || 18000}`, close: async () => undefined, drain: async () => undefined, setBackendUrl: () => undefined, markDown: () => undefined };
      },
    });
    await ok.launch({ launchId: 'r1', agentId: 'me', spec });
    await until(() => ok.state().state === 'running');
    expect(ok.state().routerUrl).toBe('http://127.0.0.1:18000');
    expect(backends).toHaveLength(2); // the two attention ranks, not the FFN rank
    await ok.stop(5000);

    const bad = new LaunchManager({
      self: { file: process.execPath, args: [script] },
      startRouter: async () => {
        throw new Error('listen EADDRINUSE: address already in use 127.0.0.1:8000');
      },
    });
    await bad.launch({ launchId: 'r2', agentId: 'me', spec });
    await until(() => bad.state().state === 'failed');
    expect(bad.state().message).toMatch(/front router could not start on port 0: listen EADDRINUSE.*Choose another apiPort/);
    await bad.stop(5000);
  });
});
