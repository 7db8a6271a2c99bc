/**
 * This agent's share of one launch: one RankRunner per placement whose agentId is ours,
 * the rendezvous port, the front router once the local attention ranks are ready, and
 * the agent protocol events that tell clients what happens (rank.started / progress /
 * ready / failed / exited, topology.state, log lines, metrics snapshots).
 *
 * A rank that dies is restarted per the spec's restart policy (RankRestarts) with the same
 * command line, so it rejoins its block; meanwhile the router routes around it and the
 * launch stays `running` with a message naming what it restarts. Stop drains the router,
 * then stops every rank at once, all within the grace period.
 */
import { randomUUID } from 'node:crypto';
import { availableParallelism } from 'node:os';
import { afdPortCount, ffnRankOf, prefillRanksOf, type AgentEvent, type GpuSharingMode, type LaunchSpec, type RankState, type RestartPolicy, type TopologyState } from '@afd/shared';
import { freePortBlock, isPortFree } from '@afd/native/ports';
import type { SelfCommand } from '../util/self.js';
import type { RingLine } from './LogRing.js';
import { checkRouterBindPolicy } from '../daemon/bindPolicy.js';
import { dboOnSharedGpus, specForPlacement } from '../gpu/dboOnSharedGpu.js';
import { LaunchGpuSharing } from '../gpu/LaunchGpuSharing.js';
import { mpsServerClients, type MpsServerLoss } from '../gpu/MpsServerWatch.js';
import type { MpsHost } from '../gpu/MpsHost.js';
import { readHostMemory, type HostMemory } from '../util/hostMemory.js';
import { checkLaunchFitsHost } from './launchMemory.js';
import { LaunchRouter, type RouterFactory } from './LaunchRouter.js';
import type { RequestLog } from '../serving/router/RequestLog.js';
import { RankRestarts } from './RankRestarts.js';
import { RankRunner, type RankRunnerOptions, type RankUpdate } from './RankRunner.js';
import { hostOfAgent, roleChildSpec } from './roleArgs.js';

export type { RouterFactory, RouterHandle } from './LaunchRouter.js';

/** Ranks get at least this long between SIGTERM and SIGKILL, even when draining used up the grace period. */
export const RANK_STOP_FLOOR_MS = 300;

export interface TopologyRunOptions {
  launchId: string;
  agentId: string;
  spec: LaunchSpec;
  self: SelfCommand;
  baseEnv: NodeJS.ProcessEnv;
  /** Address the front router binds (default 127.0.0.1). */
  routerHost?: string;
  /** The agent's advertised address: the router's URL names it when the router binds a wildcard. */
  advertiseHost?: string;
  /** Starts the front router; omitted = no router. */
  startRouter?: RouterFactory;
  /**
   * Bearer key of the launch's OpenAI API (router and serving ranks); default
   * $AFD_API_KEY of baseEnv, else open. Never put in the spec or on a command line.
   */
  apiKey?: string;
  /**
   * Resolves the model directory when the spec names none (the built-in model), once for
   * every local rank, so ranks do not race to create it; omitted = ranks use their default.
   */
  prepareDefaultModel?: (onMessage: (message: string) => void) => Promise<string>;
  runner?: RankRunnerOptions;
  /** Where the front router records the requests it serves (the agent's log); omitted = not recorded. */
  requestLog?: RequestLog;
  /** What this host has left for the ranks (default: read from /proc and the cgroup at start; null = unknown). */
  hostMemory?: () => HostMemory | null;
  /** The host's CUDA MPS, for GPUs that hold several ranks; omitted = MPS cannot be had (shared GPUs are time-sliced, or mode mps fails). */
  mps?: MpsHost;
  /** The agent's GPU sharing mode (`serve --gpu-sharing`), used when the spec says auto (default auto). */
  gpuSharing?: GpuSharingMode;
  /** Every protocol event of this launch, in order. */
  onEvent: (event: AgentEvent) => void;
  /** Raw log lines (the daemon batches them into log.lines for subscribers). */
  onLog?: (role: RankState['role'], rank: number, line: RingLine) => void;
  /** Notes for the agent's own log. */
  onNote?: (message: string) => void;
}

type RunState = TopologyState['state'];

/** Progress events of one rank are forwarded at most this often (phase changes and completion always). */
const progressIntervalMs = 100;

export class TopologyRun {
  readonly runners: RankRunner[] = [];
  private router: LaunchRouter | undefined;
  private stopping = false;
  private stopped = false;
  /** Once every rank was ready: a rank restarting later leaves the launch running (degraded). */
  private everRunning = false;
  private readonly restarts: RankRestarts<RankRunner>;
  private readonly apiKey: string | undefined;
  private readonly lastProgress = new Map<RankRunner, { phase: string; atMs: number }>();
  private readonly sharing: LaunchGpuSharing;
  afdPort = 0;
  /** Base port of the prefill ranks' KV transfer (0 without prefill ranks). */
  pdPort = 0;
  /** Identity of this start (see rendezvousIdOf); set by start(). */
  rendezvousId = '';

  constructor(private readonly opts: TopologyRunOptions) {
    this.restarts = new RankRestarts(opts.spec.restart);
    this.apiKey = opts.apiKey ?? (opts.baseEnv['AFD_API_KEY'] || undefined);
    this.sharing = new LaunchGpuSharing({
      spec: opts.spec,
      agentId: opts.agentId,
      agentMode: opts.gpuSharing ?? 'auto',
      mps: opts.mps,
      onNote: opts.onNote,
      onServerLost: (loss, message) => this.onMpsServerLost(loss, message),
    });
  }

  get launchId(): string {
    return this.opts.launchId;
  }

  /** The launch spec, with the restart policy now in effect (setRestartPolicy changes it). */
  get spec(): LaunchSpec {
    return { ...this.opts.spec, restart: this.restarts.current };
  }

  /**
   * Changes the restart policy live (the Launch screen's switch): the next rank failure
   * follows it. Switched to never, ranks waiting out a back-off stay failed (the launch
   * then reports failed). Emits topology.state, whose spec shows the new policy.
   */
  setRestartPolicy(policy: RestartPolicy): void {
    const cancelled = this.restarts.setPolicy(policy);
    for (const r of cancelled) this.opts.onNote?.(`restart policy is now never: ${r.id.role} rank ${r.id.rank} stays failed (its restart was cancelled)`);
    this.emitState();
  }

  /** Placements of this agent, FFN and prefill ranks first (they listen for the rendezvous and the KV transfer). */
  private localPlacements() {
    const order = { ffn: 0, prefill: 1, attention: 2, colocated: 3 } as const;
    return this.opts.spec.placements
      .filter((p) => p.agentId === this.opts.agentId)
      .sort((a, b) => order[a.role] - order[b.role] || a.rank - b.rank);
  }

  /** Picks the rendezvous port: the spec's, unless every rank is on this agent and that block is taken. */
  private async chooseAfdPort(): Promise<number> {
    const spec = this.opts.spec;
    if (spec.mode !== 'afd') return 0;
    // Expert parallelism: FFN rank f also listens on port + y + f (afdPortCount).
    return this.choosePortBlock('AFD', spec.afd.port, afdPortCount(spec.topology.ffn.ranks, spec.afd.enableExpertParallel));
  }

  /** Picks the prefill ranks' KV-transfer port block (pd.port + p), as chooseAfdPort; 0 without prefill ranks. */
  private async choosePdPort(): Promise<number> {
    const spec = this.opts.spec;
    if (spec.mode !== 'afd' || prefillRanksOf(spec.topology) === 0) return 0;
    return this.choosePortBlock('KV transfer', spec.afd.pd.port, prefillRanksOf(spec.topology));
  }

  /** `base`..`base + count - 1`, unless every rank is on this agent and one of them is taken: then a free block. */
  private async choosePortBlock(what: string, base: number, count: number): Promise<number> {
    const spec = this.opts.spec;
    const allLocal = spec.placements.every((p) => p.agentId === this.opts.agentId);
    if (!allLocal) return base; // other agents' ranks rely on the agreed port
    const host = hostOfAgent(spec, this.opts.agentId);
    const bindHost = host === '127.0.0.1' ? host : '0.0.0.0';
    for (let f = 0; f < count; f++) {
      if (!(await isPortFree(bindHost, base + f))) {
        const free = await freePortBlock(count, bindHost);
        this.opts.onNote?.(`${what} port block ${base}..${base + count - 1} is in use; using ${free}..${free + count - 1} (every rank is on this agent)`);
        return free;
      }
    }
    return base;
  }

  /**
   * The rendezvous id of this start. A restart reuses the launch's ports, and a rank of the
   * previous start (or of another launch on the same ports) that still dials them must not
   * join the new block or send it the shutdown flag: with every rank on this agent, each
   * start (launch or restart) draws a fresh id; across agents, which start their ranks
   * independently, every agent derives it from the launch id they share.
   */
  private rendezvousIdOf(): string {
    const spec = this.opts.spec;
    if (spec.mode !== 'afd') return '';
    if (spec.placements.every((p) => p.agentId === this.opts.agentId)) return randomUUID();
    return `launch-${this.opts.launchId}`.replace(/[^\w.:-]/g, '_').slice(0, 128);
  }

  /** Spawns every local rank; resolves with how many. Throws when a rank cannot be built. */
  async start(): Promise<number> {
    const placements = this.localPlacements();
    const routerHost = this.opts.routerHost ?? '127.0.0.1';
    if (this.opts.startRouter && placements.some((p) => p.role === 'attention' || p.role === 'colocated')) checkRouterBindPolicy(routerHost, this.apiKey);
    checkLaunchFitsHost(this.opts.spec, placements, this.opts.agentId, (this.opts.hostMemory ?? readHostMemory)());
    this.afdPort = await this.chooseAfdPort();
    this.pdPort = await this.choosePdPort();
    this.rendezvousId = this.rendezvousIdOf();
    let spec = this.opts.spec;
    if (spec.model.dir === null && this.opts.prepareDefaultModel) {
      const note = (message: string): void => this.opts.onNote?.(message);
      spec = { ...spec, model: { ...spec.model, dir: await this.opts.prepareDefaultModel(note) } };
    }
    // GPUs that hold several ranks get MPS (or are time-sliced, with a warning) before any rank starts.
    await this.sharing.start();
    const dbo = dboOnSharedGpus(spec, this.opts.agentId);
    if (dbo.note) this.opts.onNote?.(dbo.note);
    const cpuRanks = placements.filter((p) => p.backend === 'cpu').length;
    const defaultThreads = cpuRanks > 0 ? Math.max(1, Math.floor(availableParallelism() / cpuRanks)) : undefined;
    // Build every child spec first so a bad value fails the launch before anything starts.
    const children = placements.map((p) => ({
      placement: p,
      child: roleChildSpec(this.opts.self, specForPlacement(spec, p, dbo), p, {
        agentId: this.opts.agentId,
        afdPort: this.afdPort,
        pdPort: this.pdPort,
        apiHost: '127.0.0.1', // rank HTTP is for this agent and its front router only
        defaultThreads,
        baseEnv: { ...this.opts.baseEnv, ...this.sharing.envFor(p) },
        apiKey: this.apiKey,
        rendezvousId: this.rendezvousId,
      }),
    }));
    for (const { placement, child } of children) {
      const id = { role: placement.role, rank: placement.rank };
      const runner = new RankRunner(id, child, (u) => this.onRankUpdate(runner, u), this.opts.runner);
      this.runners.push(runner);
    }
    this.router = new LaunchRouter(
      {
        factory: this.opts.startRouter,
        host: routerHost,
        advertiseHost: this.opts.advertiseHost,
        port: this.opts.spec.apiPort,
        apiKey: this.apiKey,
        cors: this.opts.spec.api,
        prefixAffinity: this.opts.spec.api.routerPrefixAffinity,
        restarts: () => this.runners.map((r) => ({ role: r.id.role, rank: r.id.rank, total: this.restarts.total(r) })),
        ...(this.opts.requestLog ? { requestLog: this.opts.requestLog } : {}),
        onNote: this.opts.onNote,
      },
      // The router serves clients through attention (or colocated) ranks; FFN and prefill ranks serve them.
      this.runners.filter((r) => r.id.role === 'attention' || r.id.role === 'colocated'),
    );
    this.emitState();
    for (const r of this.runners) r.start();
    return this.runners.length;
  }

  private onRankUpdate(runner: RankRunner, u: RankUpdate): void {
    const ref = { launchId: this.opts.launchId, role: runner.id.role, rank: runner.id.rank };
    switch (u.kind) {
      case 'log':
        this.opts.onLog?.(runner.id.role, runner.id.rank, u.line);
        return;
      case 'metrics':
        this.opts.onEvent({ type: 'metrics.snapshot', launchId: this.opts.launchId, snapshot: u.snapshot });
        return;
      case 'started':
        if (u.pid > 0) this.opts.onEvent({ type: 'rank.started', ...ref, pid: u.pid });
        break;
      case 'progress': {
        const last = this.lastProgress.get(runner);
        const now = Date.now();
        const done = u.bytesTotal > 0 && u.bytesDone >= u.bytesTotal;
        if (last && last.phase === u.phase && now - last.atMs < progressIntervalMs && !done) return;
        this.lastProgress.set(runner, { phase: u.phase, atMs: now });
        this.opts.onEvent({ type: 'rank.progress', ...ref, phase: u.phase, bytesDone: u.bytesDone, bytesTotal: u.bytesTotal, ...(u.message ? { message: u.message } : {}) });
        if (last?.phase === u.phase) return; // state (phase) unchanged: no topology.state
        break;
      }
      case 'listening':
        this.router?.rankListening(runner, u.apiUrl); // a restarted rank listens on a new port
        return; // visible in topology.state once ready
      case 'ready':
        this.opts.onEvent({ type: 'rank.ready', ...ref, apiUrl: runner.apiUrl ?? null });
        this.restarts.onReady(runner);
        void this.router?.maybeStart().then(() => this.emitState());
        break;
      case 'health':
        break;
      case 'failed':
        this.opts.onEvent({ type: 'rank.failed', ...ref, exitCode: u.exitCode, signal: u.signal, message: u.message, lastLogLines: u.lastLines });
        this.onRankFailed(runner, u.message);
        break;
      case 'exited':
        this.opts.onEvent({ type: 'rank.exited', ...ref, exitCode: u.exitCode, signal: u.signal });
        break;
    }
    this.emitState();
  }

  /** A rank died without being asked to: route around it, and restart it per the policy. */
  private onRankFailed(runner: RankRunner, message: string): void {
    if (this.stopping) return;
    const spec = this.opts.spec;
    const blockOf = (f: number): RankRunner[] =>
      spec.mode === 'afd' ? this.runners.filter((r) => r.id.role === 'attention' && ffnRankOf(spec.topology, r.id.rank) === f) : [];
    this.router?.rankFailed(runner, blockOf, message);
    void this.sharing.afterFailure(runner.id);
    const name = `${runner.id.role} rank ${runner.id.rank}`;
    const decision = this.restarts.onFailed(runner, () => this.restart(runner));
    const policy = this.restarts.current;
    if (decision) {
      this.opts.onNote?.(`${message}; restarting ${name} in ${(decision.delayMs / 1000).toFixed(1)} s (restart ${decision.attempt} in a row, at most ${policy.maxRestarts})`);
    } else if (policy.policy === 'on-failure') {
      this.opts.onNote?.(`${message}; giving up on ${name} after ${this.restarts.streak(runner)} restarts in a row`);
    }
  }

  /** An MPS server died: its client ranks (on MPS-shared GPUs, started before it was last seen alive) are killed, so the restart policy takes over. */
  private onMpsServerLost(loss: MpsServerLoss, message: string): void {
    if (this.stopping) return;
    const clients = mpsServerClients(this.runners, loss, (r) => 'CUDA_MPS_PIPE_DIRECTORY' in this.sharing.envFor(r.id));
    this.opts.onNote?.(`${message}: ${clients.length > 0 ? clients.map((r) => `${r.id.role} ${r.id.rank}`).join(', ') : 'none of this launch\'s ranks was its client'}`);
    for (const r of clients) r.kill('SIGKILL');
  }

  private restart(runner: RankRunner): void {
    if (this.stopping) return;
    // A rank on an MPS-shared GPU needs the daemon: one that died is started again first.
    void this.sharing.beforeRestart(runner.id).then(() => {
      if (this.stopping) return;
      try {
        runner.start();
      } catch (e) {
        this.opts.onNote?.(`cannot restart ${runner.id.role} rank ${runner.id.rank}: ${(e as Error).message}`);
      }
      this.emitState();
    });
  }

  get routerUrl(): string | null {
    return this.router?.url ?? null;
  }

  /** Aggregate state of this agent's ranks. */
  get runState(): RunState {
    if (this.stopped) return 'stopped';
    if (this.stopping) return 'stopping';
    if (this.router?.error) return 'failed';
    if (this.runners.some((r) => r.state === 'failed' && !this.restarts.pending(r))) return 'failed';
    if (this.allReady()) return 'running';
    return this.everRunning ? 'running' : 'launching';
  }

  private allReady(): boolean {
    return this.runners.length > 0 && this.runners.every((r) => r.state === 'ready') && !this.router?.pending;
  }

  /** What the launch is recovering from, while it restarts ranks. */
  private recovering(): string | undefined {
    const busy = this.runners.filter((r) => r.state !== 'ready' && this.restarts.total(r) > 0);
    if (busy.length === 0) return undefined;
    return `restarting ${busy.map((r) => `${r.id.role} rank ${r.id.rank} (${this.restarts.pending(r) ? 'back-off' : r.state}, restart ${this.restarts.streak(r)} in a row)`).join(', ')}`;
  }

  rankStates(): RankState[] {
    return this.runners.map((r) => {
      const last = [...r.progress.entries()].pop();
      return {
        role: r.id.role,
        rank: r.id.rank,
        agentId: this.opts.agentId,
        state: r.state,
        pid: r.pid ?? null,
        apiUrl: r.apiUrl ?? null,
        progress: last ? { phase: last[0], bytesDone: last[1].bytesDone, bytesTotal: last[1].bytesTotal } : null,
        exitCode: r.exitCode,
        message: r.message,
        ...(this.restarts.total(r) > 0 ? { restarts: this.restarts.total(r) } : {}),
      };
    });
  }

  snapshot(): TopologyState {
    const state = this.runState;
    const message = this.router?.error ?? (state === 'running' ? this.recovering() : undefined);
    return {
      launchId: this.opts.launchId,
      state,
      spec: this.spec,
      ranks: this.rankStates(),
      routerUrl: this.routerUrl,
      ...(this.routerUrl ? { apiKeyRequired: this.apiKey !== undefined } : {}),
      ...(message ? { message } : {}),
      gpus: this.sharing.gpus,
    };
  }

  private emitState(): void {
    if (this.allReady()) this.everRunning = true;
    this.opts.onEvent({ type: 'topology.state', state: this.snapshot() });
  }

  rank(role: RankState['role'], rank: number): RankRunner | undefined {
    return this.runners.find((r) => r.id.role === role && r.id.rank === rank);
  }

  /**
   * Drains the front router (no new requests; in-flight ones may finish within graceMs; the
   * rest end with an error event and [DONE]), then stops every rank at once (SIGTERM,
   * SIGKILL when the grace period is over, but never sooner than RANK_STOP_FLOOR_MS after
   * SIGTERM): all of it takes at most graceMs + RANK_STOP_FLOOR_MS, a hung rank included.
   */
  async stop(graceMs = 10_000): Promise<void> {
    if (this.stopped) return;
    const deadline = Date.now() + graceMs;
    this.stopping = true;
    this.restarts.cancelAll();
    // FFN ranks may leave on their own once attention sends the shutdown flag: not a failure.
    for (const r of this.runners) r.expectStop();
    this.emitState();
    await this.router?.drain(graceMs);
    const left = Math.max(RANK_STOP_FLOOR_MS, deadline - Date.now());
    await Promise.all(this.runners.map((r) => r.stop(left)));
    await this.sharing.stop();
    this.stopped = true;
    this.emitState();
  }
}
