/**
 * `afd-agent launch` across two real hosts: network namespaces host-a and host-b, each
 * running `afd-agent serve` on its own address with TLS and its own token, the CLI in a
 * console namespace (agent/src/testing/netns). CPU backend, built-in tiny model.
 *
 * - 2A2F with the FFN ranks on host-a and the attention ranks on host-b (every layer
 *   crosses the link), and with one block per host: greedy tokens equal the colocated
 *   run, the API is reachable from the console namespace, and no rendezvous or data-plane
 *   address is loopback.
 * - A partition (host-a's link cut) in the middle of a stream: the stream ends within the
 *   step deadline with an error naming the FFN peer, the CLI reports the agent
 *   unreachable and the attention ranks not serving, and once the link is back the
 *   launch recovers and new requests succeed (the ranks reconnect in place); the CLI then
 *   stops cleanly, no rank left. A rank that dies during the partition is restarted once
 *   the link is back: that case needs issue 18's `launch --restart on-failure` and is
 *   skipped while the launch CLI has no --restart.
 * - 2 ms of one-way delay between the hosts (a delaying relay): the step slows by about
 *   2 x layers x 2 ms plus the step's control round trip, and the ranks' per-layer wire
 *   time shows the delay.
 * - A wrong CA, a wrong token and a host that is down fail the CLI within seconds with
 *   what to do.
 *
 * Needs root and `ip netns` (CI runs as root); skipped with the reason otherwise.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resolveRankConfig, type RankConfig } from '@afd/shared';
import { complete } from '../testing/rankHttp.js';
import { killAllRoles, RoleProcess } from '../testing/RoleProcess.js';
import { ensureTinyModel } from '../model/defaultModel.js';
import { bundleEntry, testAddonPath } from '../testing/agentBundle.js';
import { crossingsPerStep } from '../bench/twoHostsReport.js';
import { measureDelay } from '../testing/netns/latency.js';
import { isRunning } from '../testing/netns/NetnsBed.js';
import { netnsSupport } from '../testing/netns/netnsSupport.js';
import { hostOfAgentId, postJson, rankStats, startCliLaunch, stopCliLaunch, streamCompletion } from '../testing/netns/bedClients.js';
import { CONSOLE, GPU_HOSTS, TwoHostBed, type GpuHost } from '../testing/netns/TwoHostBed.js';
import { until as waitUntil } from '../testing/until.js';

const support = await netnsSupport();
/** Shared by test runs: the built-in model is made once. */
const modelsHome = join(tmpdir(), 'afd-two-hosts-models');
const prompts = [
  [9707, 11, 1879, 0],
  [785, 3974, 13876, 38835],
  [3838, 374, 279],
];
const maxTokens = 6;
const stepDeadlineMs = 3000;
let two: TwoHostBed;
let agentScript = '';
const reference: string[] = [];

const until = (cond: () => boolean | Promise<boolean>, what: string, ms: number, pollMs = 100): Promise<number> => waitUntil(cond, what, ms, { pollMs });

/** Role processes running on a host (everything in its namespace but the agent). */
async function roleProcesses(host: GpuHost): Promise<{ pid: number; args: string[] }[]> {
  const out: { pid: number; args: string[] }[] = [];
  for (const pid of await two.bed.pids(host)) {
    try {
      const args = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
      if (args.includes('role')) out.push({ pid, args });
    } catch {
      // exited meanwhile
    }
  }
  return out;
}

/** The rank config a role process was started with (its --rank-config argument, read by the role's schema). */
function configOf(args: readonly string[]): RankConfig {
  return resolveRankConfig(JSON.parse(args[args.indexOf('--rank-config') + 1]!));
}

/** Established TCP connections in a host's namespace: [local, peer] address:port pairs. */
async function connections(host: GpuHost): Promise<{ local: string; peer: string }[]> {
  const r = await two.bed.exec(host, 'ss', ['-tnH', 'state', 'established']);
  return r.stdout
    .split('\n')
    .map((l) => l.trim().split(/\s+/))
    .filter((f) => f.length >= 4)
    .map((f) => ({ local: f[2]!, peer: f[3]! }));
}

const completionBody = (prompt: number[]) => ({ model: 'tiny-qwen3-moe', prompt, max_tokens: maxTokens, temperature: 0, ignore_eos: true });

async function greedyThrough(url: string): Promise<string[]> {
  const texts: string[] = [];
  for (const p of prompts) {
    const r = await postJson(two, `${url}/v1/completions`, completionBody(p));
    expect(r.status, r.body).toBe(200);
    texts.push((JSON.parse(r.body) as { choices: { text: string }[] }).choices[0]!.text);
  }
  return texts;
}

/** After a stop: no role process on either host, the agents still up. */
async function expectNoRanksLeft(): Promise<void> {
  await until(async () => (await roleProcesses('host-a')).length + (await roleProcesses('host-b')).length === 0, 'every role process to exit', 20_000);
  for (const h of GPU_HOSTS) expect(two.agents.get(h)!.exit).toBeUndefined();
}

/** Whether this tree's launch CLI restarts failed ranks (issue 18's --restart). */
let cliHasRestart = false;
if (support.ok) {
  const help = spawnSync(process.execPath, [await bundleEntry('cli'), 'launch', '--help'], { encoding: 'utf8' });
  cliHasRestart = /--restart\b/.test(help.stdout);
}

beforeAll(async () => {
  if (!support.ok) return;
  agentScript = await bundleEntry('cli');
  const { dir: model } = await ensureTinyModel(modelsHome);
  // The reference: a colocated rank on this host's loopback, same model, same prompts.
  const colocated = await RoleProcess.start({ role: 'colocated', model, home: modelsHome });
  try {
    const url = await colocated.ready();
    for (const p of prompts) reference.push((await complete(url, p, maxTokens)).text);
  } finally {
    await colocated.stop();
  }
  two = await TwoHostBed.start({ agentScript, benchScript: await bundleEntry('bench'), env: { AFD_NATIVE_ADDON: testAddonPath() }, modelsHome });
}, 240_000);

afterAll(async () => {
  await killAllRoles();
  if (!two) return;
  const agentPids = GPU_HOSTS.map((h) => two.agents.get(h)!.pid);
  const ids = GPU_HOSTS.map((h) => two.bed.namespace(h));
  await two.teardown();
  for (const pid of agentPids) expect(isRunning(pid)).toBe(false);
  for (const ns of ids) expect(existsSync(`/run/netns/${ns}`)).toBe(false);
}, 120_000);

describe.skipIf(!support.ok)(`afd-agent launch on two hosts${support.ok ? '' : ` (skipped: ${support.reason})`}`, { timeout: 300_000 }, () => {
  it('2A2F with the FFN ranks on host-a and the attention ranks on host-b: every layer crosses, tokens equal colocated, nothing on loopback', async () => {
    const launch = await startCliLaunch(two, agentScript, ['--topology', '2A2F', '--api-port', '8000', '--afd-port', '29500']);
    try {
      expect(launch.ranks.map((r) => `${r.role}${r.rank}@${hostOfAgentId(r.agentId)}`).sort()).toEqual(['attention0@host-b', 'attention1@host-b', 'ffn0@host-a', 'ffn1@host-a']);
      const api = launch.routers.get('host-b:7700')!;
      expect(api).toBe(`http://${two.bed.address('host-b')}:8000`);
      expect(launch.routers.has('host-a:7700')).toBe(false);
      expect(await greedyThrough(api)).toEqual(reference);

      // Every rendezvous and data-plane address comes from the configuration: the FFN
      // ranks listen on host-a's address, the attention ranks dial it.
      const ffn = await roleProcesses('host-a');
      const attn = await roleProcesses('host-b');
      expect(ffn).toHaveLength(2);
      expect(attn).toHaveLength(2);
      for (const p of [...ffn, ...attn]) expect(configOf(p.args).afd.host).toBe('host-a');
      const a = two.bed.address('host-a');
      const b = two.bed.address('host-b');
      const afdLinks = (await connections('host-b')).filter((c) => /:2950[01]$/.test(c.peer));
      expect(afdLinks.map((c) => c.peer).sort()).toEqual([`${a}:29500`, `${a}:29501`]);
      for (const c of afdLinks) expect(c.local.startsWith(`${b}:`)).toBe(true);
      // Loopback only where both ends share a namespace: rank HTTP to its own agent and router.
      for (const h of GPU_HOSTS) {
        for (const c of await connections(h)) {
          if (/:2950\d$/.test(c.local) || /:2950\d$/.test(c.peer)) expect(c.local.startsWith('127.') || c.peer.startsWith('127.'), `${h}: ${c.local} <-> ${c.peer}`).toBe(false);
        }
      }
      // The models endpoint and the router's health, also from the console namespace.
      const models = await two.bed.exec(CONSOLE, 'curl', ['-sS', '-H', `@${two.apiHeaderFile}`, `${api}/v1/models`]);
      expect(models.stdout).toContain('tiny-qwen3-moe');
      // The router is off loopback, so the API wants the launch's key.
      const open = await two.bed.exec(CONSOLE, 'curl', ['-sS', '-o', '/dev/null', '-w', '%{http_code}', `${api}/v1/models`]);
      expect(open.stdout).toBe('401');
    } finally {
      expect(await stopCliLaunch(launch)).toBe(0);
    }
    expect(launch.cli.tail()).toContain('all ranks stopped');
    await expectNoRanksLeft();
  });

  it('2A2F with one block per host (--placement block): F0 and A0 on host-a, F1 and A1 on host-b', async () => {
    const launch = await startCliLaunch(two, agentScript, ['--topology', '2A2F', '--placement', 'block', '--api-port', '8000', '--afd-port', '29500']);
    try {
      expect(launch.ranks.map((r) => `${r.role}${r.rank}@${hostOfAgentId(r.agentId)}`).sort()).toEqual(['attention0@host-a', 'attention1@host-b', 'ffn0@host-a', 'ffn1@host-b']);
      // A front router per host, each over its own attention rank.
      expect([...launch.routers.keys()].sort()).toEqual(['host-a:7700', 'host-b:7700']);
      for (const [id, url] of launch.routers) {
        expect(url).toBe(`http://${two.bed.address(hostOfAgentId(id))}:8000`);
        expect(await greedyThrough(url)).toEqual(reference);
      }
      // Each block meets at its own host's address (configuration), not at 127.0.0.1.
      for (const h of GPU_HOSTS) {
        const procs = await roleProcesses(h);
        for (const p of procs) expect(configOf(p.args).afd.ffnHosts).toEqual(['host-a', 'host-b']);
        const peers = (await connections(h)).filter((c) => /:2950[01]$/.test(c.peer)).map((c) => c.peer);
        expect(peers).toEqual([`${two.bed.address(h)}:${h === 'host-a' ? 29500 : 29501}`]);
      }
    } finally {
      expect(await stopCliLaunch(launch)).toBe(0);
    }
    await expectNoRanksLeft();
  });

  it('a partition in the middle of a stream: a bounded error naming the peer, reports of the loss, recovery once the link is back', async () => {
    const launch = await startCliLaunch(two, agentScript, ['--topology', '2A2F', '--api-port', '8000', '--afd-port', '29500', '--step-deadline-ms', String(stepDeadlineMs)]);
    const api = launch.routers.get('host-b:7700')!;
    let cut = false;
    try {
      const stream = streamCompletion(two, `${api}/v1/completions`, { model: 'tiny-qwen3-moe', prompt: 'Once upon a time', max_tokens: 20_000, temperature: 0, ignore_eos: true });
      await until(() => stream.events.length >= 20, 'the stream to be under way', 60_000);
      const mark = launch.cli.mark();
      await two.bed.setLink('host-a', 'down');
      cut = true;
      const tCut = performance.now();

      // The stream ends within the step deadline (plus scheduling slack on a loaded box)
      // with an error event naming the FFN peer, then [DONE]; curl exits.
      const streamEnd = await Promise.race([stream.done, new Promise<'hung'>((r) => setTimeout(() => r('hung'), stepDeadlineMs + 15_000))]);
      expect(streamEnd, 'the stream hung past the step deadline').not.toBe('hung');
      const errorEvent = stream.events.find((e) => typeof e.data === 'object' && e.data !== null && 'error' in e.data);
      expect(errorEvent, JSON.stringify(stream.events.slice(-3))).toBeDefined();
      const errorAfterMs = errorEvent!.atMs - tCut;
      expect((errorEvent!.data as { error: { message: string } }).error.message).toMatch(/FFN rank [01] at host-a:2950[01]/);
      expect(errorAfterMs).toBeLessThan(stepDeadlineMs + 5000);
      expect(stream.events.at(-1)?.data).toBe('[DONE]');
      console.log(`partition: stream error ${(errorAfterMs / 1000).toFixed(2)} s after the cut (step deadline ${stepDeadlineMs / 1000} s)`);

      // The CLI says host-a's agent is unreachable, and host-b's agent reports its ranks lost their FFN peer.
      await launch.cli.waitForLine(/host-a:7700: agent unreachable/, 15_000, 'host-a reported unreachable', mark);
      await launch.cli.waitForLine(/host-b:7700 attention [01] is not serving: lost FFN rank [01] at host-a:2950[01]/, 15_000, 'a lost FFN peer reported', mark);
      // Meanwhile the API answers at once, with an error that says why (no hang).
      const during = await postJson(two, `${api}/v1/completions`, completionBody(prompts[0]!), 20);
      expect(during.code).toBe(0);
      expect(during.status).toBeGreaterThanOrEqual(500);

      const healMark = launch.cli.mark();
      await two.bed.setLink('host-a', 'up');
      cut = false;
      const tHeal = performance.now();
      await launch.cli.waitForLine(/host-a:7700: agent reachable again/, 20_000, 'host-a reachable again', healMark);
      const recoveredMs = await until(async () => (await postJson(two, `${api}/v1/completions`, completionBody(prompts[0]!), 20)).status === 200, 'a completion after the link is back', 60_000, 500);
      await launch.cli.waitForLine(/attention [01] is serving again/, 15_000, 'the ranks serving again', healMark);
      console.log(`partition: first successful completion ${((performance.now() - tHeal) / 1000).toFixed(2)} s after the link came back (${(recoveredMs / 1000).toFixed(2)} s of polling)`);
      expect(await greedyThrough(api)).toEqual(reference);
      expect(launch.cli.exit).toBeUndefined();
      const ranks = await Promise.all(GPU_HOSTS.map((h) => roleProcesses(h)));
      expect(ranks.flat().map((p) => p.pid).sort()).toEqual(launch.ranks.map((r) => r.pid).sort()); // recovered in place
    } finally {
      if (cut) await two.bed.setLink('host-a', 'up');
      expect(await stopCliLaunch(launch)).toBe(0);
    }
    await expectNoRanksLeft();
  });

  // Needs issue 18's `afd-agent launch --restart on-failure` (restart a failed block's
  // ranks with back-off). Without it the launch exits 1 when a rank dies, so this case is
  // skipped until the launch CLI has --restart; a partition alone (above) needs no restart.
  it.skipIf(!cliHasRestart)(`a rank that dies during the partition is restarted once the link is back (issue 18: --restart on-failure${cliHasRestart ? '' : '; skipped: this launch CLI has no --restart'})`, async () => {
    const launch = await startCliLaunch(two, agentScript, ['--topology', '2A2F', '--api-port', '8000', '--afd-port', '29500', '--step-deadline-ms', String(stepDeadlineMs), '--restart', 'on-failure']);
    const api = launch.routers.get('host-b:7700')!;
    const ffn0 = launch.ranks.find((r) => r.role === 'ffn' && r.rank === 0)!;
    let cut = false;
    try {
      await two.bed.setLink('host-a', 'down');
      cut = true;
      process.kill(ffn0.pid, 'SIGKILL'); // the FFN rank dies while its host is cut off
      await new Promise((r) => setTimeout(r, stepDeadlineMs));
      await two.bed.setLink('host-a', 'up');
      cut = false;
      await until(async () => (await postJson(two, `${api}/v1/completions`, completionBody(prompts[0]!), 20)).status === 200, 'a completion after the restart', 120_000, 1000);
      expect(await greedyThrough(api)).toEqual(reference);
      expect(launch.cli.exit).toBeUndefined();
      const ffn = (await roleProcesses('host-a')).filter((p) => configOf(p.args).afd.rank === 0);
      expect(ffn).toHaveLength(1);
      expect(ffn[0]!.pid).not.toBe(ffn0.pid);
    } finally {
      if (cut) await two.bed.setLink('host-a', 'up');
      expect(await stopCliLaunch(launch)).toBe(0);
    }
    await expectNoRanksLeft();
  });

  it('2 ms of one-way delay between the hosts: the step slows by about 2 x layers x 2 ms, and the wire time shows it', async () => {
    const delayMs = 2;
    const relay = await two.startRelay('host-a', [29500, 29501], 0);
    try {
      const launch = await startCliLaunch(two, agentScript, ['--topology', '2A2F', '--api-port', '8000', '--afd-port', '29500']);
      try {
        const api = launch.routers.get('host-b:7700')!;
        const attn = launch.ranks.filter((r) => r.role === 'attention');
        // The attention ranks reach host-a through the relay.
        expect((await connections('host-b')).filter((c) => /:2950[01]$/.test(c.peer)).map((c) => c.peer.split(':')[0])).toEqual([relay.address, relay.address]);
        const numLayers = (await rankStats(two, 'host-b', attn[0]!.apiUrl))['numLayers'] as number;
        const { baseline: direct, delayed } = await measureDelay(two, relay, api, attn, { delayMs, tokens: 96, repeats: 3 });
        const achievedMs = delayed.achievedDelayMs;
        const slowdown = delayed.stepMs - direct.stepMs;
        // Per step: A->F and F->A of every layer, plus the step's control round trip
        // (step request, step-go): 2 x layers + 2 crossings.
        const crossings = crossingsPerStep(numLayers);
        console.log(
          `latency: ${numLayers} layers, ${delayMs} ms one-way (relay achieved ${achievedMs.toFixed(2)} ms): step ${direct.stepMs.toFixed(2)} -> ${delayed.stepMs.toFixed(2)} ms (+${slowdown.toFixed(2)} ms; ` +
            `2 x layers x delay = ${2 * numLayers * delayMs} ms, with the control round trip ${crossings * delayMs} ms, at the achieved delay ${(crossings * achievedMs).toFixed(1)} ms); ` +
            `median inter-token gap ${direct.itlMs.toFixed(2)} -> ${delayed.itlMs.toFixed(2)} ms`,
        );
        // At least every per-layer crossing; no more than the model's crossings at the delay the
        // relay achieved, with room for a loaded 2-core box (each crossing also waits for the
        // relay and the receiver to be scheduled): one extra round trip per layer would add
        // 2 x layers x delay, 1.8 x the model.
        const runs = `step ms at 0: ${direct.stepMsRuns.map((v) => v.toFixed(1))}; at ${delayMs}: ${delayed.stepMsRuns.map((v) => v.toFixed(1))}`;
        expect(slowdown, runs).toBeGreaterThanOrEqual(2 * numLayers * delayMs * 0.9);
        expect(slowdown, runs).toBeLessThanOrEqual(crossings * achievedMs * 1.4 + 3);
        // The per-layer wire time of the serving attention rank shows the one-way delay (and not at 0 ms).
        expect(delayed.wireUsPerLayer).toHaveLength(numLayers);
        for (const us of delayed.wireUsPerLayer) expect(us).toBeGreaterThanOrEqual(delayMs * 1000 * 0.9);
        // At 0 ms a layer's wire time is mostly tens of microseconds, but one sample per layer
        // can catch a scheduling delay of milliseconds on a loaded machine: compare the least.
        expect(Math.min(...delayed.wireUsPerLayer) - Math.min(...direct.wireUsPerLayer), `wire us: ${direct.wireUsPerLayer} -> ${delayed.wireUsPerLayer}`).toBeGreaterThanOrEqual(delayMs * 1000 * 0.5);
      } finally {
        expect(await stopCliLaunch(launch)).toBe(0);
      }
    } finally {
      await relay.process.stop();
      two.bed.routeVia('host-a', null);
    }
    await expectNoRanksLeft();
  });

  it('a wrong CA, a wrong token and a host that is down: the CLI fails within seconds saying what to do', async () => {
    const run = async (args: string[]): Promise<{ code: number | null; stderr: string; ms: number }> => {
      const t0 = performance.now();
      const p = two.spawnInConsole('afd-agent launch', process.execPath, [agentScript, 'launch', '--topology', '2A2F', '--backend', 'cpu', '--api-port', '0', ...args]);
      const exit = await Promise.race([p.exited, new Promise<'hung'>((r) => setTimeout(() => r('hung'), 30_000))]);
      if (exit === 'hung') await p.stop(1000);
      return { code: exit === 'hung' ? null : exit.code, stderr: p.tail(), ms: performance.now() - t0 };
    };
    const hosts = ['--hosts', `${two.url('host-a')},${two.url('host-b')}`];
    const tokens = GPU_HOSTS.flatMap((h) => ['--token-file', two.tokenFiles.get(h)!]);

    const wrongCa = await run([...hosts, ...tokens, '--ca-file', two.pki.otherCaFile]);
    expect(wrongCa.code).toBe(1);
    expect(wrongCa.stderr).toMatch(/agent at wss:\/\/host-a:7700 presented a TLS certificate that no CA this client trusts has signed \(\w+\): pass the CA .* with --ca-file/);

    const noCa = await run([...hosts, ...tokens]);
    expect(noCa.code).toBe(1);
    expect(noCa.stderr).toMatch(/no CA this client trusts/);

    const swapped = await run([...hosts, '--token-file', two.tokenFiles.get('host-b')!, '--token-file', two.tokenFiles.get('host-a')!, '--ca-file', two.pki.caFile]);
    expect(swapped.code).toBe(1);
    expect(swapped.stderr).toMatch(/agent at wss:\/\/host-a:7700 rejected the token \(HTTP 401.*\): use the token in that agent's token file/);

    await two.bed.setLink('host-b', 'down');
    let down;
    try {
      down = await run([...hosts, ...tokens, '--ca-file', two.pki.caFile]);
    } finally {
      await two.bed.setLink('host-b', 'up');
    }
    expect(down.code).toBe(1);
    expect(down.stderr).toMatch(/agent at wss:\/\/host-b:7700 (is unreachable \(EHOSTUNREACH\)|did not complete the connection in time)/);

    await two.agents.get('host-b')!.stop();
    let stopped;
    try {
      stopped = await run([...hosts, ...tokens, '--ca-file', two.pki.caFile]);
    } finally {
      await two.startAgent('host-b');
    }
    expect(stopped.code).toBe(1);
    expect(stopped.stderr).toMatch(/agent at wss:\/\/host-b:7700 refused the connection: is `afd-agent serve` running there/);

    for (const r of [wrongCa, noCa, swapped, down, stopped]) expect(r.ms, r.stderr).toBeLessThan(15_000);
    console.log(`errors: wrong CA ${(wrongCa.ms / 1000).toFixed(1)} s, wrong token ${(swapped.ms / 1000).toFixed(1)} s, host down ${(down.ms / 1000).toFixed(1)} s, agent stopped ${(stopped.ms / 1000).toFixed(1)} s (each including the CLI's start)`);
  });
});
