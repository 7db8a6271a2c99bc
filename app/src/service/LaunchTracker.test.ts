import { describe, expect, it } from 'vitest';
import { launchSpecSchema, type RankState, type TopologyState } from '@afd/shared';
import { LaunchTracker } from './LaunchTracker.js';

const spec = launchSpecSchema.parse({
  mode: 'afd',
  topology: '2A2F',
  placements: [
    { role: 'ffn', rank: 0, agentId: 'b', backend: 'cpu' },
    { role: 'ffn', rank: 1, agentId: 'b', backend: 'cpu' },
    { role: 'attention', rank: 0, agentId: 'a', backend: 'cpu' },
    { role: 'attention', rank: 1, agentId: 'a', backend: 'cpu' },
  ],
});

const rank = (role: RankState['role'], r: number, agentId: string, state: RankState['state'], apiUrl: string | null = null): RankState => ({
  role,
  rank: r,
  agentId,
  state,
  pid: 10 + r,
  apiUrl,
  progress: null,
  exitCode: null,
  message: null,
});
const topo = (launchId: string, state: TopologyState['state'], ranks: RankState[], routerUrl: string | null = null, gpus: TopologyState['gpus'] = []): { type: 'topology.state'; state: TopologyState } => ({
  type: 'topology.state',
  state: { launchId, state, spec, ranks, routerUrl, gpus },
});

describe('LaunchTracker', () => {
  it('starts pending on every rank of the spec', () => {
    const t = new LaunchTracker('L', spec);
    const p = t.progress();
    expect(p.state).toBe('launching');
    expect(p.ranks.map((r) => `${r.role}${r.rank}@${r.agentId}:${r.state}`)).toEqual(['ffn0@b:pending', 'ffn1@b:pending', 'attention0@a:pending', 'attention1@a:pending']);
    expect(t.agentIds().sort()).toEqual(['a', 'b']);
  });

  it('merges progress from two agents and runs once every agent runs', () => {
    const t = new LaunchTracker('L', spec);
    t.apply('b', { type: 'rank.progress', launchId: 'L', role: 'ffn', rank: 0, phase: 'loading', bytesDone: 50, bytesTotal: 100 });
    expect(t.progress().ranks[0]).toMatchObject({ state: 'loading', progress: { bytesDone: 50, bytesTotal: 100 } });
    expect(t.apply('b', { type: 'rank.ready', launchId: 'OTHER', role: 'ffn', rank: 0, apiUrl: null })).toBe(false);
    t.apply('b', topo('L', 'running', [rank('ffn', 0, 'b', 'ready'), rank('ffn', 1, 'b', 'ready')]));
    t.apply('a', topo('L', 'launching', [rank('attention', 0, 'a', 'ready', 'http://a:1'), rank('attention', 1, 'a', 'ready', 'http://a:2')]));
    // Every rank is ready but agent a has not started its router yet.
    expect(t.progress().state).toBe('launching');
    t.apply('a', topo('L', 'running', [rank('attention', 0, 'a', 'ready', 'http://a:1'), rank('attention', 1, 'a', 'ready', 'http://a:2')], 'http://a:8000'));
    expect(t.progress()).toMatchObject({ state: 'running', routerUrl: 'http://a:8000', message: null, model: null, apiKeyRequired: null });
    // The router's agent says whether its API wants a key.
    const withKey = topo('L', 'running', [rank('attention', 0, 'a', 'ready', 'http://a:1'), rank('attention', 1, 'a', 'ready', 'http://a:2')], 'http://a:8000');
    t.apply('a', { ...withKey, state: { ...withKey.state, apiKeyRequired: true } });
    expect(t.progress().apiKeyRequired).toBe(true);
    // The served model: asked once per router URL, shown only for that URL, forgotten on restart.
    expect(t.modelToFetch()).toBe('http://a:8000');
    const model = { name: 'afd-demo-moe', parameters: 12_604_032, description: 'demo model', examplePrompts: [] };
    t.setServedModel('http://a:8000', model, 'afd-demo-moe-id');
    expect(t.modelToFetch()).toBeNull();
    expect(t.progress()).toMatchObject({ model, modelId: 'afd-demo-moe-id' });
    t.markRestarting();
    expect(t.progress().model).toBeNull();
  });

  it('lists every agent\'s GPUs and how they are shared, under the console\'s agent ids', () => {
    const t = new LaunchTracker('L', spec);
    expect(t.progress().gpus).toEqual([]);
    const shared = { agentId: 'local', deviceIndex: 0, ranks: [{ role: 'attention' as const, rank: 0, smShare: 40 }, { role: 'attention' as const, rank: 1, smShare: 40 }], sharing: 'mps' as const, note: 'MPS (control daemon on /h/mps/pipe)' };
    const own = { agentId: 'local', deviceIndex: 0, ranks: [{ role: 'ffn' as const, rank: 0, smShare: null }], sharing: 'exclusive' as const, note: null };
    t.apply('a', topo('L', 'launching', [rank('attention', 0, 'a', 'loading')], null, [shared]));
    t.apply('b', topo('L', 'launching', [rank('ffn', 0, 'b', 'loading')], null, [own]));
    expect(t.progress().gpus.map((g) => `${g.agentId}:${g.deviceIndex}:${g.sharing}`).sort()).toEqual(['a:0:mps', 'b:0:exclusive']);
  });

  it('reports the first failure once, with the last log lines that add to it', () => {
    const t = new LaunchTracker('L', spec);
    const why = 'model path missing: /nope';
    const lines = ['reading /nope', '{"type":"failed","message":"model path missing: /nope"}', `{"level":50,"msg":"role failed","err":{"message":"${why}"}}`, 'ENOENT'];
    t.apply('b', { type: 'rank.failed', launchId: 'L', role: 'ffn', rank: 1, exitCode: 1, signal: null, message: `ffn rank 1 exited with code 1: ${why}`, lastLogLines: lines });
    t.apply('b', topo('L', 'failed', [rank('ffn', 0, 'b', 'ready'), { ...rank('ffn', 1, 'b', 'failed'), message: 'short' }]));
    const p = t.progress();
    expect(p.state).toBe('failed');
    expect(p.message).toBe('ffn rank 1 on agent b exited with code 1: model path missing: /nope');
    expect(p.ranks[1]!.message).toBe('ffn rank 1 exited with code 1: model path missing: /nope\nlast log lines:\nreading /nope\nENOENT');
    expect(p.ranks[1]!.message!.split(why)).toHaveLength(2);
    t.apply('b', { type: 'rank.exited', launchId: 'L', role: 'ffn', rank: 1, exitCode: 1, signal: null });
    expect(t.progress().ranks[1]!.state).toBe('failed');
    // A second failing rank does not change what the launch says.
    t.apply('a', { type: 'rank.failed', launchId: 'L', role: 'attention', rank: 0, exitCode: 1, signal: null, message: 'attention rank 0 exited with code 1: peer gone', lastLogLines: [] });
    expect(t.progress().message).toBe(p.message);
  });

  it('with restart policy on-failure, a dead rank is the agent\'s to restart: no failure until the agent gives up', () => {
    const restarting = launchSpecSchema.parse({ ...spec, restart: { policy: 'on-failure' } });
    const t = new LaunchTracker('L', restarting);
    t.apply('b', { type: 'rank.failed', launchId: 'L', role: 'ffn', rank: 0, exitCode: null, signal: 'SIGKILL', message: 'ffn rank 0 was killed by SIGKILL', lastLogLines: [] });
    expect(t.progress().state).toBe('launching');
    expect(t.needsCleanup).toBe(false);
    t.apply('b', topo('L', 'failed', [{ ...rank('ffn', 0, 'b', 'failed'), message: 'ffn rank 0 was killed by SIGKILL' }, rank('ffn', 1, 'b', 'ready')]));
    expect(t.progress().state).toBe('failed');
    expect(t.needsCleanup).toBe(true);
  });

  it('with restart policy on-failure, counts the restarts and keeps the last cause (one line) until a manual restart', () => {
    const restarting = launchSpecSchema.parse({ ...spec, restart: { policy: 'on-failure' } });
    const t = new LaunchTracker('L', restarting);
    expect(t.progress().recovery).toBeUndefined();
    const lastLogLines = ['boom'];
    t.apply('b', { type: 'rank.failed', launchId: 'L', role: 'ffn', rank: 0, exitCode: null, signal: 'SIGKILL', message: 'ffn rank 0 was killed by SIGKILL', lastLogLines });
    expect(t.progress().recovery).toEqual({ restarts: 0, lastCause: 'ffn rank 0 on agent b was killed by SIGKILL' });
    // The agent restarted it: its topology.state carries the count.
    t.apply('b', topo('L', 'running', [{ ...rank('ffn', 0, 'b', 'ready'), restarts: 1 }, { ...rank('ffn', 1, 'b', 'ready'), restarts: 2 }]));
    expect(t.progress().recovery).toEqual({ restarts: 3, lastCause: 'ffn rank 0 on agent b was killed by SIGKILL' });
    // Another launch's failure is not this one's cause.
    t.apply('b', { type: 'rank.failed', launchId: 'M', role: 'ffn', rank: 1, exitCode: 1, signal: null, message: 'ffn rank 1 exited with code 1', lastLogLines: [] });
    expect(t.progress().recovery?.lastCause).toBe('ffn rank 0 on agent b was killed by SIGKILL');
    t.markRestarting();
    expect(t.progress().recovery).toBeUndefined();
  });

  it('follows the restart policy the agents report: switched to never, a rank the agent no longer restarts fails the launch', () => {
    const t = new LaunchTracker('L', launchSpecSchema.parse({ ...spec, restart: { policy: 'on-failure', maxRestarts: 4 } }));
    expect(t.progress().restart).toMatchObject({ policy: 'on-failure', maxRestarts: 4 });
    t.apply('b', { type: 'rank.failed', launchId: 'L', role: 'ffn', rank: 0, exitCode: null, signal: 'SIGKILL', message: 'ffn rank 0 was killed by SIGKILL', lastLogLines: [] });
    expect(t.progress().state).toBe('launching'); // the agent restarts it
    const never = launchSpecSchema.parse({ ...spec, restart: { policy: 'never', maxRestarts: 4 } });
    const ranks = [{ ...rank('ffn', 0, 'b', 'failed'), message: 'ffn rank 0 was killed by SIGKILL' }, rank('ffn', 1, 'b', 'ready')];
    t.apply('b', { type: 'topology.state', state: { launchId: 'L', state: 'failed', spec: never, ranks, routerUrl: null, gpus: [] } });
    expect(t.progress()).toMatchObject({ state: 'failed', message: 'ffn rank 0 on agent b was killed by SIGKILL', restart: { policy: 'never', maxRestarts: 4 } });
    expect(t.needsCleanup).toBe(true);
    // Another launch's state does not change this one's policy.
    t.apply('b', { type: 'topology.state', state: { launchId: 'M', state: 'running', spec: launchSpecSchema.parse({ ...spec, restart: { policy: 'on-failure' } }), ranks: [], routerUrl: null, gpus: [] } });
    expect(t.restartPolicy.policy).toBe('never');
    t.setRestartPolicy({ ...t.restartPolicy, policy: 'on-failure' });
    expect(t.progress().restart?.policy).toBe('on-failure');
  });

  it('with restart policy never, reports no recovery', () => {
    const t = new LaunchTracker('L', spec);
    t.apply('b', { type: 'rank.failed', launchId: 'L', role: 'ffn', rank: 0, exitCode: 1, signal: null, message: 'ffn rank 0 exited with code 1', lastLogLines: [] });
    expect(t.progress().recovery).toBeUndefined();
  });

  it('after a failure, lists the ranks the clean-up stopped and stays failed', () => {
    const t = new LaunchTracker('L', spec);
    t.apply('a', topo('L', 'launching', [rank('attention', 0, 'a', 'rendezvous'), rank('attention', 1, 'a', 'rendezvous')]));
    t.apply('b', topo('L', 'failed', [{ ...rank('ffn', 0, 'b', 'failed'), message: 'ffn rank 0 exited with code 1: port 29500 in use' }, rank('ffn', 1, 'b', 'loading')]));
    expect(t.needsCleanup).toBe(true);
    t.beginCleanup();
    expect(t.needsCleanup).toBe(false);
    expect(t.progress().cleanup).toEqual({ state: 'stopping', stopped: ['agent b: ffn 1', 'agent a: attention 0, attention 1'], problems: [] });
    t.markAgentStopped('a');
    t.markAgentStopped('b');
    t.apply('b', topo('L', 'stopped', [{ ...rank('ffn', 0, 'b', 'failed'), message: 'x' }, rank('ffn', 1, 'b', 'exited')]));
    t.endCleanup([]);
    const p = t.progress();
    expect(p).toMatchObject({ state: 'failed', message: 'ffn rank 0 on agent b exited with code 1: port 29500 in use', cleanup: { state: 'done', problems: [] } });
    expect(p.cleanup!.stopped).toEqual(['agent b: ffn 1', 'agent a: attention 0, attention 1']);
    expect(p.ranks.filter((r) => r.state === 'exited')).toHaveLength(3);
    t.markRestarting();
    expect(t.progress()).toMatchObject({ state: 'launching', message: null, cleanup: null });
  });

  it('names an agent that refused the launch', () => {
    const t = new LaunchTracker('L', spec);
    t.failLaunch('a', 'a launch is running; stop it first');
    expect(t.progress()).toMatchObject({ state: 'failed', message: 'agent a could not launch its ranks: a launch is running; stop it first' });
  });

  it('goes stopping -> stopped, and restarts clean', () => {
    const t = new LaunchTracker('L', spec);
    t.markStopping();
    expect(t.progress().state).toBe('stopping');
    t.markAgentStopped('a');
    expect(t.progress().state).toBe('stopping');
    t.apply('b', topo('L', 'stopped', []));
    expect(t.progress().state).toBe('stopped');
    expect(t.isStopped).toBe(true);
    t.markRestarting();
    expect(t.progress().state).toBe('launching');
    expect(t.progress().ranks.every((r) => r.state === 'pending')).toBe(true);
  });

  it('falls back to attention rank 0 API without a router', () => {
    const t = new LaunchTracker('L', spec);
    t.apply('a', topo('L', 'running', [rank('attention', 1, 'a', 'ready', 'http://a:2'), rank('attention', 0, 'a', 'ready', 'http://a:1')]));
    expect(t.routerUrl()).toBe('http://a:1');
  });
});

describe('LaunchTracker with prefill ranks', () => {
  const pdSpec = launchSpecSchema.parse({
    mode: 'afd',
    topology: '1P1A1F',
    placements: [
      { role: 'prefill', rank: 0, agentId: 'p', backend: 'cpu' },
      { role: 'ffn', rank: 0, agentId: 'a', backend: 'cpu' },
      { role: 'attention', rank: 0, agentId: 'a', backend: 'cpu' },
    ],
  });

  it('lists the prefill rank with its state, and serves the API through the attention rank, never the prefill rank', () => {
    const t = new LaunchTracker('L', pdSpec);
    expect(t.progress().ranks.map((r) => `${r.role}${r.rank}:${r.state}`)).toEqual(['prefill0:pending', 'ffn0:pending', 'attention0:pending']);
    // The prefill rank's agent reports a router first (its own HTTP server): the attention rank's agent still wins.
    t.apply('p', { type: 'topology.state', state: { launchId: 'L', state: 'running', spec: pdSpec, ranks: [rank('prefill', 0, 'p', 'ready', 'http://p:1')], routerUrl: 'http://p:8000', gpus: [] } });
    t.apply('a', { type: 'topology.state', state: { launchId: 'L', state: 'running', spec: pdSpec, ranks: [rank('ffn', 0, 'a', 'ready'), rank('attention', 0, 'a', 'ready', 'http://a:1')], routerUrl: 'http://a:8000', gpus: [] } });
    expect(t.progress().ranks.find((r) => r.role === 'prefill')?.state).toBe('ready');
    expect(t.routerUrl()).toBe('http://a:8000');
  });
});
