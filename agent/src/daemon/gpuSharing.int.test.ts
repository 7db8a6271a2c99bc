/**
 * GPU sharing through real agents, with the stand-in nvidia-cuda-mps-control first on their
 * PATH (this machine has no GPU: the CUDA ranks start, log how they share their GPU and
 * fail on the CPU-only addon, which is all these tests need of them). Under auto, two ranks
 * on one GPU get one control daemon, started before they start and quit when the launch
 * stops or the agent exits; ranks get its pipe directory and their SM shares; no daemon for
 * one rank per GPU or for time-slice; a daemon that will not start fails a launch that
 * demands MPS (nothing left running) and leaves an auto launch time-sliced with a warning;
 * a daemon that died is started again before ranks are restarted.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchSpecSchema, type AgentEvent, type GpuSharingConfigInput, type LaunchSpecInput, type RankPlacement, type TopologyState } from '@afd/shared';
import { mpsDaemonAnswers } from '../gpu/mpsControl.js';
import { connectRecording, isAlive, startAgent } from '../testing/AgentProcess.js';
import { agentScript, testAddonPath } from '../testing/agentBundle.js';
import { installMpsStandIn, type MpsStandIn } from '../testing/mpsStandIn.js';
import { until } from '../testing/until.js';

let standIn: MpsStandIn;
beforeAll(async () => {
  standIn = await installMpsStandIn();
});
afterAll(() => standIn.remove());

/** An agent with the stand-in on its PATH, recording its events. */
async function agentWith(mode: Parameters<MpsStandIn['env']>[0]) {
  const agent = await startAgent([], standIn.env(mode));
  const events: AgentEvent[] = [];
  const pids = new Set<number>();
  const client = await connectRecording(agent, events, pids);
  const pipe = join(agent.home, 'mps', 'pipe');
  const state = (): TopologyState | undefined => events.filter((e): e is Extract<AgentEvent, { type: 'topology.state' }> => e.type === 'topology.state').at(-1)?.state;
  const launch = (launchId: string, devices: [number, number], gpuSharing: GpuSharingConfigInput = {}, restart: LaunchSpecInput['restart'] = { policy: 'never' }) => {
    events.length = 0;
    const placements: RankPlacement[] = [
      { role: 'ffn', rank: 0, agentId: 'local', backend: 'cuda', deviceIndex: devices[0] },
      { role: 'attention', rank: 0, agentId: 'local', backend: 'cuda', deviceIndex: devices[1] },
    ];
    // A model directory that does not exist: the ranks fail fast after logging how they share their GPU.
    const spec = { mode: 'afd', topology: '1A1F', apiPort: 0, model: { dir: '/nonexistent/model' }, restart, afd: { connector: 'tcp' }, placements, gpuSharing } as const;
    return client.request('topology.launch', { launchId, agentId: 'local', spec: launchSpecSchema.parse(spec) });
  };
  const failedRanks = (): number => new Set(events.filter((e) => e.type === 'rank.failed').map((e) => (e as { role: string }).role)).size;
  const stop = () => client.request('topology.stop', { graceMs: 2000 });
  const answers = (): Promise<boolean> => mpsDaemonAnswers(standIn.program, pipe, process.env, 5000);
  // The agent's log reaches this process through a pipe, maybe after the launch's answer: wait for it.
  const noted = async (text: string): Promise<boolean> => {
    await until(() => agent.stderr.some((l) => l.includes(text)), `the agent to log "${text}"`, 10_000, { explain: () => agent.stderr.slice(-5).join('\n') });
    return true;
  };
  return { agent, client, events, pids, pipe, state, launch, failedRanks, stop, answers, noted };
}

const daemonStarts = (pipe: string): number => standIn.starts().filter((r) => r.pipeDir === pipe).length;
const daemonCommands = (pipe: string): string[] => standIn.records().filter((r) => r.event === 'command' && r.pipeDir === pipe).map((r) => r.command!);
const dashDRuns = (pipe: string): number => standIn.records().filter((r) => r.event === 'invoke' && r.args?.[0] === '-d' && r.pipeDir === pipe).length;

describe('GPU sharing under an agent (stand-in MPS control program)', { timeout: 120_000 }, () => {
  let a: Awaited<ReturnType<typeof agentWith>>;
  beforeAll(async () => {
    a = await agentWith('ok');
  });
  afterAll(async () => {
    await a?.client.close();
    if (a?.agent.child.exitCode === null) await a.agent.stop();
    standIn.quitDaemons([a.pipe]);
  });

  it('auto, two ranks on one GPU: one daemon started before the ranks, which get its pipe directory and their SM shares; quit at stop', async () => {
    const inv = await a.client.request('inventory.get', {});
    expect(inv.mps).toEqual({ controlProgram: standIn.program, daemon: null, unavailable: null });
    await a.launch('shared', [0, 0], { smShare: { attention: 40, ffn: 60 } });
    expect(daemonStarts(a.pipe)).toBe(1);
    expect(await a.answers()).toBe(true);
    expect(a.state()!.gpus).toEqual([
      { agentId: 'local', deviceIndex: 0, ranks: [{ role: 'ffn', rank: 0, smShare: 60 }, { role: 'attention', rank: 0, smShare: 40 }], sharing: 'mps', note: `MPS (control daemon on ${a.pipe})` },
    ]);
    expect(await a.noted(`GPU 0 (ffn 0, attention 0): ranks share the GPU under CUDA MPS (started control daemon on ${a.pipe})`)).toBe(true);
    await until(() => a.failedRanks() === 2, 'both ranks to fail on the CPU-only addon', 60_000);
    for (const [role, share] of [['ffn', 60], ['attention', 40]] as const) {
      const { lines } = await a.client.request('logs.get', { role, rank: 0, tail: 200 });
      expect(lines.map((l) => l.text), role).toContain(`GPU shared under CUDA MPS (control daemon on ${a.pipe}, ${share}% of the GPU's SMs)`);
    }
    await a.stop();
    expect(daemonCommands(a.pipe).filter((c) => c === 'quit')).toHaveLength(1);
    expect(await a.answers()).toBe(false);
  });

  it('one rank per GPU: no daemon, each GPU its own rank\'s', async () => {
    const before = dashDRuns(a.pipe);
    await a.launch('apart', [0, 1]);
    expect(a.state()!.gpus.map((g) => [g.deviceIndex, g.sharing])).toEqual([[0, 'exclusive'], [1, 'exclusive']]);
    await until(() => a.failedRanks() === 2, 'both ranks to fail', 60_000);
    const { lines } = await a.client.request('logs.get', { role: 'ffn', rank: 0, tail: 200 });
    expect(lines.some((l) => l.text.includes('CUDA MPS'))).toBe(false);
    await a.stop();
    expect(dashDRuns(a.pipe)).toBe(before);
  });

  it('time-slice: no daemon, the GPU reported time-sliced, and a warning naming the cost and the fix', async () => {
    const before = dashDRuns(a.pipe);
    await a.launch('sliced', [0, 0], { mode: 'time-slice' });
    expect(a.state()!.gpus).toMatchObject([{ deviceIndex: 0, sharing: 'time-slice', note: 'the launch asks for gpuSharing time-slice', ranks: [{ smShare: null }, { smShare: null }] }]);
    expect(await a.noted('GPU 0 (ffn 0, attention 0) is shared without MPS (the launch asks for gpuSharing time-slice): the driver time-slices')).toBe(true);
    expect(await a.noted('use GPU sharing auto or mps (--gpu-sharing)')).toBe(true);
    await a.stop();
    expect(dashDRuns(a.pipe)).toBe(before);
  });

  it('starts the daemon again, before restarting the ranks, when it died under the launch', async () => {
    const before = daemonStarts(a.pipe);
    await a.launch('restarts', [0, 0], {}, { policy: 'on-failure', maxRestarts: 1000, backoffMs: 100, maxBackoffMs: 400 });
    expect(daemonStarts(a.pipe)).toBe(before + 1);
    const daemonPid = standIn.starts().filter((r) => r.pipeDir === a.pipe).at(-1)!.pid;
    process.kill(daemonPid, 'SIGKILL');
    await until(() => daemonStarts(a.pipe) === before + 2, 'the daemon started again for a restarted rank', 60_000);
    expect(await a.noted(`the MPS control daemon on ${a.pipe} had stopped answering`)).toBe(true);
    await a.stop();
    expect(await a.answers()).toBe(false);
  });

  it('quits the daemon when the agent itself stops with the launch running', async () => {
    await a.launch('at-exit', [0, 0]);
    expect(await a.answers()).toBe(true);
    const quitsBefore = daemonCommands(a.pipe).filter((c) => c === 'quit').length;
    expect(await a.agent.stop()).toBe(0);
    expect(daemonCommands(a.pipe).filter((c) => c === 'quit')).toHaveLength(quitsBefore + 1);
    expect(await a.answers()).toBe(false);
    expect([...a.pids].filter(isAlive)).toEqual([]);
  });
});

describe('a control daemon that will not start', { timeout: 120_000 }, () => {
  let a: Awaited<ReturnType<typeof agentWith>>;
  beforeAll(async () => {
    a = await agentWith('fail-start');
  });
  afterAll(async () => {
    await a?.client.close();
    await a?.agent.stop();
  });

  it('fails a launch that demands MPS, quoting the daemon\'s log, with no rank started and nothing left running', async () => {
    const err = await a.launch('needs-mps', [0, 0], { mode: 'mps' }).then(
      () => null,
      (e: unknown) => e as { code: string; message: string },
    );
    expect(err?.code).toBe('launch-failed');
    expect(err?.message).toMatch(/^launch needs-mps failed to start: gpuSharing mps: GPU 0 \(ffn 0, attention 0\) need MPS, but the MPS control daemon \(.*nvidia-cuda-mps-control, pipe directory .*\) started \(nvidia-cuda-mps-control -d exited 0\) but did not answer within 10 s; its control\.log \(.*\) ends: .*Failed to start the control daemon: stand-in told to fail/);
    expect(a.events.some((e) => e.type === 'rank.started')).toBe(false);
    expect(await a.answers()).toBe(false);
    expect(readdirSync(join(a.agent.home, 'mps', 'users'))).toEqual([]);
  });

  it('runs an auto launch time-sliced, saying why and what to do', async () => {
    await a.launch('auto-falls-back', [0, 0], { smShare: { ffn: 60 } });
    const gpu = a.state()!.gpus[0]!;
    expect(gpu.sharing).toBe('time-slice');
    expect(gpu.note).toMatch(/^MPS could not be started: the MPS control daemon .* did not answer within 10 s/);
    expect(await a.noted('GPU 0 (ffn 0, attention 0) is shared without MPS (MPS could not be started:')).toBe(true);
    expect(await a.noted('the SM shares asked for apply under MPS only and are ignored')).toBe(true);
    await a.stop();
  });
});

describe('afd-agent launch on a host with one GPU', { timeout: 120_000 }, () => {
  it('puts 1A1F on GPU 0 under MPS, and quits the daemon when the launch ends', async () => {
    const home = mkdtempSync(join(tmpdir(), 'afd-mps-cli-'));
    const model = mkdtempSync(join(tmpdir(), 'afd-mps-model-')); // exists, holds no model: the ranks fail
    const pipe = join(home, 'mps', 'pipe');
    try {
      const child = spawn(process.execPath, [await agentScript(), 'launch', '--backend', 'cuda', '--gpus', '0', '--restart', 'never', '--api-port', '0', '--model', model, '--sm-share', 'ffn=70'], {
        env: { ...process.env, ...standIn.env(), AFD_HOME: home, AFD_NATIVE_ADDON: testAddonPath() },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let out = '';
      child.stdout.on('data', (c: Buffer) => (out += c.toString()));
      child.stderr.on('data', (c: Buffer) => (out += c.toString()));
      const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
      expect(code, out).toBe(1);
      expect(out).toContain(`GPU 0 (ffn 0, attention 0): ranks share the GPU under CUDA MPS (started control daemon on ${pipe})`);
      expect(daemonStarts(pipe)).toBe(1);
      expect(daemonCommands(pipe)).toContain('quit');
      expect(await mpsDaemonAnswers(standIn.program, pipe, process.env, 5000)).toBe(false);
    } finally {
      standIn.quitDaemons([pipe]);
      rmSync(home, { recursive: true, force: true });
      rmSync(model, { recursive: true, force: true });
    }
  });
});
