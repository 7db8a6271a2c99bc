/**
 * `afd-agent launch`: a topology without the console. This process is the local agent
 * (the same LaunchManager `serve` uses, in-process) and, with --hosts, drives remote
 * agents over their WebSocket API with the same spec. It shows progress and prints the
 * endpoints once every rank is ready. A rank that dies is restarted with back-off
 * (restart policy on-failure, the default) while the router routes around its block;
 * the launch ends on Ctrl-C / SIGTERM (drained: exit 0), or when a rank cannot be brought
 * back (policy never, or too many restarts in a row: exit 1).
 */
import { randomUUID } from 'node:crypto';
import { failureTail, prettyLogLine, remoteRankHost, type AgentEvent, type LaunchConfigInput, type LaunchSpec, type RemoteRankHost, type TopologyState } from '@afd/shared';
import { LaunchManager } from '../daemon/LaunchManager.js';
import { runProbeInChild } from '../probe/runProbe.js';
import { selfCommand } from '../util/self.js';
import { buildCliLaunchSpec, type CliHost, type CliPlacement } from './cliSpec.js';
import { RemoteAgent } from './RemoteAgent.js';
import { killAllGroupsNow } from './ChildProcessGroup.js';
import { launchSummary } from './launchSummary.js';
import { ProgressView } from './ProgressView.js';
import type { RouterFactory } from './TopologyRun.js';

export interface HeadlessOptions {
  /** "xAyF", or "colocated" / "colocated:N". */
  topology: string;
  /** The config sections the flags and --config gave (the launch spec defaults the rest). */
  config: LaunchConfigInput;
  apiHost: string;
  backend?: 'cpu' | 'cuda';
  gpus?: number[];
  threads?: number;
  /** Bearer key of the OpenAI API (router and ranks); undefined = open (loopback only). */
  apiKey?: string;
  /** Agent URLs (ws:// or wss://) and/or "local". */
  hosts: string[];
  /** Address remote ranks reach this host at (with --hosts). */
  advertiseHost?: string;
  /** Token of each remote host, in --hosts order (one entry per remote URL). */
  tokens?: string[];
  /** CA certificates (PEM) trusted for wss:// hosts (replace the system CAs). */
  ca?: (string | Buffer)[];
  /** Rank placement over hosts (default world). */
  placement?: CliPlacement;
  stopGraceMs: number;
  startRouter?: RouterFactory;
  prepareDefaultModel?: (onMessage: (m: string) => void) => Promise<string>;
}

interface Target {
  agentId: string;
  /** Its host when it is not this one (a remote agent): how its ranks' URLs are shown. */
  remote: RemoteRankHost | null;
  launch(launchId: string, spec: LaunchSpec): Promise<void>;
  stop(graceMs: number): Promise<void>;
  state: TopologyState | undefined;
}

/** Resolves when stopped by a signal (exit code 0) or a failure (1). */
export async function runHeadlessLaunch(opts: HeadlessOptions): Promise<number> {
  const view = new ProgressView();
  const probe = await runProbeInChild();
  const localGpus = opts.gpus ?? probe.result.devices.map((d) => d.index);
  const backend = opts.backend ?? (probe.result.devices.length > 0 ? 'cuda' : 'cpu');
  if (probe.degraded && backend === 'cuda') throw new Error(`--backend cuda, but the GPU stack is unusable: ${probe.degraded}`);
  let failure: string | undefined;
  let resolveDone!: (code: number) => void;
  const done = new Promise<number>((r) => (resolveDone = r));
  /** The last rank failure seen (with its output), reported if the launch gives up. */
  let lastRankFailure: string | undefined;
  const onEvent = (host: string, t: Target, e: AgentEvent): void => {
    view.onEvent(host, e, t.remote);
    const prefix = host ? `${host}: ` : '';
    if (e.type === 'rank.failed') {
      // The output lines that add to the message (no role events, no record repeating it).
      const lines = failureTail(e.message, e.lastLogLines).map(prettyLogLine).slice(-10);
      lastRankFailure = `${prefix}${e.message}${lines.length > 0 ? `\n  last output:\n    ${lines.join('\n    ')}` : ''}`;
      if (t.agentId !== 'local') view.log(`${prefix}${e.role} ${e.rank} failed: ${e.message}`); // local ones: the manager's note says what happens next
    }
    if (e.type === 'topology.state') {
      noteHealthChanges(host, t.state, e.state, (m) => view.log(m));
      t.state = e.state;
      // Failed = a rank that will not be restarted (or the router could not start); a rank
      // that is being restarted leaves the launch running.
      if (e.state.state === 'failed' && !failure) {
        failure = e.state.message ? `${prefix}${e.state.message}` : (lastRankFailure ?? `${prefix}a rank failed`);
        resolveDone(1);
      }
    }
  };

  const hostSpecs = opts.hosts.length > 0 ? opts.hosts : ['local'];
  const targets: Target[] = [];
  const cliHosts: CliHost[] = [];
  const remotes: RemoteAgent[] = [];
  const closeRemotes = (): Promise<unknown> => Promise.all(remotes.map((r) => r.close()));
  const remoteUrls = hostSpecs.filter((h) => h !== 'local');
  for (const h of hostSpecs) {
    if (h === 'local') {
      const manager = new LaunchManager({
        self: selfCommand(),
        startRouter: opts.startRouter,
        prepareDefaultModel: opts.prepareDefaultModel,
        routerHost: opts.apiHost,
        advertiseHost: opts.advertiseHost,
        onNote: (m) => view.log(m),
      });
      const t: Target = {
        agentId: 'local',
        remote: null,
        state: undefined,
        launch: async (launchId, spec) => void (await manager.launch({ launchId, agentId: 'local', spec, apiKey: opts.apiKey })),
        stop: async (graceMs) => void (await manager.stop(graceMs)),
      };
      manager.onEvent((e) => onEvent(hostSpecs.length > 1 ? 'local' : '', t, e));
      targets.push(t);
      cliHosts.push({ agentId: 'local', address: opts.advertiseHost ?? '127.0.0.1', gpus: localGpus });
      continue;
    }
    let url: URL;
    try {
      url = new URL(h);
    } catch {
      await closeRemotes();
      throw new Error(`--hosts entry "${h}" is neither "local" nor an agent URL like wss://gpu2:7700`);
    }
    if (url.protocol !== 'ws:' && url.protocol !== 'wss:') {
      await closeRemotes();
      throw new Error(`--hosts entry ${h} must be a ws:// or wss:// agent URL`);
    }
    const token = opts.tokens?.[remoteUrls.indexOf(h)];
    if (!token) {
      await closeRemotes();
      throw new Error(`remote --hosts need the agents' tokens: pass --token-file (one for every agent, or one per remote host in --hosts order)`);
    }
    const agentId = url.host;
    const t: Target = {
      agentId,
      remote: remoteRankHost(agentId, h, null), // with its advertised address once known
      state: undefined,
      launch: async () => undefined, // set once connected
      stop: async () => undefined,
    };
    let remote: RemoteAgent;
    try {
      remote = await RemoteAgent.connect({ url: h, token, ca: opts.ca, onEvent: (e) => onEvent(agentId, t, e), onNote: (m) => view.log(m) });
    } catch (e) {
      await closeRemotes();
      throw e;
    }
    remotes.push(remote);
    const inv = await remote.request('inventory.get', {});
    t.launch = async (launchId, spec) => void (await remote.request('topology.launch', { launchId, agentId, spec, apiKey: opts.apiKey }));
    t.stop = async (graceMs) => void (await remote.request('topology.stop', { graceMs }, graceMs * 3 + 10_000));
    targets.push(t);
    // Other hosts reach this agent's ranks at the address it advertises, else at the URL's host.
    t.remote = remoteRankHost(agentId, h, inv.advertiseHost);
    cliHosts.push({ agentId, address: inv.advertiseHost ?? url.hostname, gpus: inv.devices.filter((d) => d.kind === 'cuda').map((d) => d.index) });
  }
  if (hostSpecs.length > 1 && cliHosts.some((c) => c.agentId === 'local') && !opts.advertiseHost) {
    await closeRemotes();
    throw new Error('with remote --hosts, pass --advertise-host <address other hosts reach this one at>');
  }

  let spec: LaunchSpec;
  try {
    spec = buildCliLaunchSpec({ topology: opts.topology, backend, hosts: cliHosts, threads: opts.threads, placement: opts.placement, config: opts.config });
  } catch (e) {
    await closeRemotes();
    throw e;
  }
  const launchId = randomUUID();
  const t0 = Date.now();
  const name = spec.mode === 'afd' ? spec.topology.name : `colocated x${spec.placements.length}`;
  view.log(`launching ${name} on ${backend} (${spec.placements.length} ranks, model ${spec.model.dir ?? 'built-in'})`);

  let stopping = false;
  const stopAll = async (): Promise<void> => {
    if (stopping) return;
    stopping = true;
    await Promise.all(targets.map((t) => t.stop(opts.stopGraceMs).catch((e: unknown) => view.log(`stop on ${t.agentId} failed: ${(e as Error).message}`))));
  };
  let signals = 0;
  const onSignal = (sig: string): void => {
    signals++;
    if (signals > 1) {
      killAllGroupsNow();
      process.exit(130);
    }
    view.log(`${sig}: stopping every rank`);
    resolveDone(0);
  };
  process.on('SIGINT', () => onSignal('SIGINT'));
  process.on('SIGTERM', () => onSignal('SIGTERM'));

  try {
    for (const t of targets) await t.launch(launchId, spec);
  } catch (e) {
    failure = (e as Error).message;
    resolveDone(1);
  }
  const readyWatch = setInterval(() => {
    if (failure || stopping) return;
    if (targets.every((t) => t.state?.state === 'running')) {
      clearInterval(readyWatch);
      view.stop();
      process.stdout.write(launchSummary(name, targets, (Date.now() - t0) / 1000));
    }
  }, 100);

  const code = await done;
  clearInterval(readyWatch);
  view.stop();
  if (failure) process.stderr.write(`afd-agent launch: ${failure}\n`);
  await stopAll();
  await closeRemotes();
  process.stderr.write('all ranks stopped\n');
  return code;
}

/**
 * Says when a ready rank stops serving (its /health reason: e.g. its FFN peer was lost in
 * a partition) and when it serves again: the agents' report of a lost rank.
 */
function noteHealthChanges(host: string, before: TopologyState | undefined, now: TopologyState, log: (m: string) => void): void {
  for (const r of now.ranks) {
    if (r.state !== 'ready') continue;
    const prev = before?.ranks.find((p) => p.role === r.role && p.rank === r.rank);
    if (!prev || prev.state !== 'ready' || prev.message === r.message) continue;
    const who = `${host ? `${host} ` : ''}${r.role} ${r.rank}`;
    log(r.message ? `${who} is not serving: ${r.message}` : `${who} is serving again`);
  }
}
