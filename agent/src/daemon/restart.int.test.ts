/**
 * Restart of a failed 2A2F launch on the same rendezvous ports, with real role processes
 * (CPU backend, the built-in model). Regression: a relaunch once came up with both FFN
 * ranks joined by a rank of another start (a stale reconnect loop, or another launch on
 * the same ports), which then sent them the shutdown flag; they exited 0 and the new
 * attention ranks failed their handshake. Each start now carries its own rendezvous id:
 * a stray attention rank dialing the port is refused with the reason (or, had the real
 * rank won the race, never accepted) and the restarted block comes up. Repeated, since the
 * race needs a loaded machine to show.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchSpecSchema, type AgentEvent, type TopologyState } from '@afd/shared';
import { freePortBlock } from '@afd/native/ports';
import type { AgentClient } from './AgentClient.js';
import { connectRecording, isAlive, startAgent, type StartedAgent } from '../testing/AgentProcess.js';
import { testAddonPath } from '../testing/agentBundle.js';
import { defaultServedModelName } from '../model/defaultModel.js';
import { until as waitUntil } from '../testing/until.js';

let agent: StartedAgent;
let client: AgentClient;
const events: AgentEvent[] = [];
const pids = new Set<number>();
const strays: ChildProcess[] = [];

beforeAll(async () => {
  agent = await startAgent();
  client = await connectRecording(agent, events, pids);
});

afterAll(async () => {
  for (const s of strays) if (s.exitCode === null && s.signalCode === null) s.kill('SIGKILL');
  await client?.request('topology.stop', { graceMs: 10_000 }).catch(() => undefined);
  await client?.close();
  expect(await agent?.stop()).toBe(0);
  const t0 = Date.now();
  while ([...pids].some(isAlive) && Date.now() - t0 < 10_000) await new Promise((r) => setTimeout(r, 50));
  expect([...pids].filter(isAlive)).toEqual([]);
});

function state(): TopologyState | undefined {
  return events.filter((e): e is Extract<AgentEvent, { type: 'topology.state' }> => e.type === 'topology.state').at(-1)?.state;
}

function failures(): string[] {
  return events.flatMap((e) => (e.type === 'rank.failed' ? [`${e.message}\n  ${e.lastLogLines.join('\n  ')}`] : []));
}

const until = (cond: () => boolean, what: string, ms: number): Promise<number> =>
  waitUntil(cond, what, ms, { pollMs: 50, explain: () => `ranks: ${JSON.stringify(state()?.ranks.map((r) => [r.role, r.rank, r.state, r.message]))}; failures: ${failures().join('\n')}` });

/** A hand-started attention rank 0 (no rendezvous id) dialing the launch's port, as a stale rank would. */
function startStray(port: number): { child: ChildProcess; output: string[]; exited: Promise<number | null> } {
  const child = spawn(process.execPath, [agent.script, 'role', 'attention', '--topology', '2A2F', '--rank', '0', '--backend', 'cpu', '--threads', '1', '--afd-port', String(port), '--api-port', '0'], {
    env: { ...process.env, AFD_HOME: agent.home, AFD_NATIVE_ADDON: testAddonPath(), CUDA_VISIBLE_DEVICES: '' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  strays.push(child);
  const output: string[] = [];
  child.stdout!.on('data', (b: Buffer) => output.push(b.toString()));
  child.stderr!.on('data', (b: Buffer) => output.push(b.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, output, exited };
}

const ranks = ['attention0:ready', 'attention1:ready', 'ffn0:ready', 'ffn1:ready'];

describe('restart of a failed 2A2F launch', { timeout: 600_000 }, () => { // real processes on a loaded 2-core box
  it('comes back with every rank ready, several times, while a stray rank dials its port', async () => {
    const port = await freePortBlock(2);
    const placements = (['ffn', 'attention'] as const).flatMap((role) => [0, 1].map((rank) => ({ role, rank, agentId: 'local', backend: 'cpu' as const, threads: 1 })));
    const spec = launchSpecSchema.parse({ mode: 'afd', topology: '2A2F', apiPort: 0, afd: { port }, placements });
    await client.request('topology.launch', { launchId: 'restart-race', agentId: 'local', spec });
    await until(() => state()?.state === 'running', '2A2F running', 240_000);
    expect(failures()).toEqual([]);

    for (let round = 0; round < 2; round++) {
      const ffn0 = state()!.ranks.find((r) => r.role === 'ffn' && r.rank === 0)!;
      process.kill(ffn0.pid!, 'SIGKILL'); // as the console e2e test does
      await until(() => state()?.state === 'failed', `round ${round}: launch failed after FFN rank 0 was killed`, 60_000);
      // Round 0: a rank of no start (no rendezvous id) dials FFN rank 0's port meanwhile,
      // racing the restarted attention rank 0 (both redial every 100 ms).
      const stray = round === 0 ? startStray(port) : undefined;
      if (stray) await until(() => stray.output.join('').includes('"phase":"rendezvous"'), 'the stray rank dialing', 120_000);
      events.length = 0;
      expect(await client.request('topology.restart', {})).toEqual({ launchId: 'restart-race' });
      await until(() => state()?.state === 'running' || state()?.state === 'failed', `round ${round}: running again`, 240_000);
      expect(failures(), `round ${round}`).toEqual([]);
      expect(state()!.ranks.map((r) => `${r.role}${r.rank}:${r.state}`).sort()).toEqual(ranks);
      if (stray) {
        // Two legitimate outcomes. The stray reached FFN rank 0 first: it is refused with the
        // reason and exits 1 (a stale peer can neither join nor shut the block down). The real
        // rank 0 got there first: the block completed, the FFN stopped accepting, and the stray
        // waits unaccepted in the listen backlog until its rendezvous timeout; it never joined.
        // (native/src/comm/afdRendezvousId.test.ts covers the refusal deterministically.)
        const code = await Promise.race([stray.exited, new Promise<'still running'>((r) => setTimeout(() => r('still running'), 20_000))]);
        const output = stray.output.join('');
        if (code === 'still running') {
          stray.child.kill('SIGKILL');
          await stray.exited;
        } else {
          expect(code, output).toBe(1);
          expect(output).toMatch(/belongs to another start of the topology \(rendezvous id none/);
        }
        expect(output).not.toContain('"type":"ready"');
        expect(state()!.ranks.map((r) => r.pid)).not.toContain(stray.child.pid);
      }
      const res = await fetch(`${state()!.routerUrl}/v1/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: defaultServedModelName(), prompt: 'hello', max_tokens: 3, temperature: 0 }),
      });
      expect(res.status, `round ${round}`).toBe(200);
      expect(state()!.ranks.map((r) => `${r.role}${r.rank}:${r.state}`).sort()).toEqual(ranks);
    }
  });
});
