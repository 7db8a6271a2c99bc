import { describe, expect, it } from 'vitest';
import { launchSpecSchema, type AgentMethod } from '@afd/shared';
import type { AgentConnection } from './AgentConnection.js';
import { LaunchTracker } from './LaunchTracker.js';
import { requestEachAgent, setLaunchRestartPolicy } from './launchAgents.js';

/** 1A1F over two agents: the FFN rank on b, the attention rank on a. */
const spec = launchSpecSchema.parse({
  mode: 'afd',
  topology: '1A1F',
  placements: [{ role: 'ffn', rank: 0, agentId: 'b', backend: 'cpu' }, { role: 'attention', rank: 0, agentId: 'a', backend: 'cpu' }],
  restart: { policy: 'on-failure', maxRestarts: 10 },
});

type Sent = { agentId: string; method: AgentMethod; params: unknown };

/** A connection that records what it is sent and answers as an agent would (or refuses, with `refuse`). */
function fakeConn(agentId: string, sent: Sent[], refuse?: string): AgentConnection {
  const conn = {
    request: async (method: AgentMethod, params: Record<string, unknown>) => {
      sent.push({ agentId, method, params });
      if (refuse) throw new Error(refuse);
      if (method === 'topology.stop') return { stopped: true };
      const { launchId, ...change } = params;
      return { launchId, restart: { ...spec.restart, ...change } };
    },
  };
  return conn as unknown as AgentConnection;
}

describe('setLaunchRestartPolicy', () => {
  it('sends the change to every agent of the launch, like stop, and records the policy they took', async () => {
    const sent: Sent[] = [];
    const conns = { a: fakeConn('a', sent), b: fakeConn('b', sent) };
    const t = new LaunchTracker('L', spec);
    const r = await setLaunchRestartPolicy(t, (id) => conns[id as 'a' | 'b'], { policy: 'never', maxRestarts: 3 });
    expect(r).toEqual({ restart: { policy: 'never', maxRestarts: 3, backoffMs: 1000, maxBackoffMs: 30_000 } });
    expect(sent.map((s) => s.agentId).sort()).toEqual(['a', 'b']);
    expect(sent[0]).toMatchObject({ method: 'topology.setRestartPolicy', params: { launchId: 'L', policy: 'never', maxRestarts: 3 } });
    expect(t.progress().restart).toEqual(r.restart);
  });

  it('names the agents that did not take it, and keeps the old policy', async () => {
    const sent: Sent[] = [];
    const conns = { a: fakeConn('a', sent), b: fakeConn('b', sent, 'no launch L on this agent: it runs launch K (running)') };
    const t = new LaunchTracker('L', spec);
    await expect(setLaunchRestartPolicy(t, (id) => conns[id as 'a' | 'b'], { policy: 'never' })).rejects.toThrow(
      'the restart policy changed on a but not everywhere: agent b: the restart policy change failed: no launch L on this agent: it runs launch K (running)',
    );
    expect(t.restartPolicy.policy).toBe('on-failure');
    await expect(setLaunchRestartPolicy(t, () => undefined, { policy: 'never' })).rejects.toThrow(/^the restart policy did not change: agent (a|b) is no longer known to the console/);
  });

  it('refuses without a launch, and for a launch that is stopping', async () => {
    await expect(setLaunchRestartPolicy(null, () => undefined, { policy: 'never' })).rejects.toThrow('no launch to change: launch a topology first');
    const t = new LaunchTracker('L', spec);
    t.markStopping();
    await expect(setLaunchRestartPolicy(t, () => undefined, { policy: 'never' })).rejects.toThrow('launch L is stopping: its restart policy can no longer change');
  });
});

describe('requestEachAgent', () => {
  it('asks every agent in parallel, runs `after` for each that was asked, and lists the failures', async () => {
    const sent: Sent[] = [];
    const conns: Record<string, AgentConnection> = { a: fakeConn('a', sent), b: fakeConn('b', sent, 'timed out') };
    const after: string[] = [];
    const out = await requestEachAgent(['a', 'b', 'gone'], (id) => conns[id], 'stop', 'topology.stop', { graceMs: 10 }, 1000, (id) => after.push(id));
    expect(out.answers).toEqual([{ agentId: 'a', result: { stopped: true } }]);
    expect(out.problems.sort()).toEqual(['agent b: stop failed: timed out', 'agent gone is no longer known to the console: check it by hand']);
    expect(after.sort()).toEqual(['a', 'b']);
  });
});
