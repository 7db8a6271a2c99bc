/**
 * This agent's share of one launch: one RankRunner per placement whose agentId is ours,
 * the rendezvous port, the front router once the local attention ranks are ready, and
 * the agent protocol events that tell clients what happens (rank.started / progress /
 * ready / failed / exited, topology.state, log lines, metrics snapshots).
 */
import { randomUUID } from 'node:crypto';
import { availableParallelism } from 'node:os';
import { resolveTopology, type AgentEvent, type LaunchSpec, type RankState, type TopologyState } from '@afd/shared';
import { freePortBlock, isPortFree } from '@afd/native/ports';
import type { SelfCommand } from '../util/self.js';
import type { RingLine } from './LogRing.js';
import { RankRunner, type RankRunnerOptions, type RankUpdate } from './RankRunner.js';
import { hostOfAgent, roleChildSpec } from './roleArgs.js';
import { advertisedUrl } from '../daemon/advertiseHost.js';

/** A front router started over this agent's attention ranks. */
export interface RouterHandle {
  url: string;
  close(): Promise<void>;
}

/** Starts the topology's OpenAI front router on `port` balancing over `backends` (rank base URLs). */
export type RouterFactory = (backends: string[], host: string, port: number) => Promise<RouterHandle>;

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
   * Resolves the model directory when the spec names none (the built-in model), once for
   * every local rank, so ranks do not race to create it; omitted = ranks use their default.
   */
  prepareDefaultModel?: (onMessage: (message: string) => void) => Promise<string>;
  runner?: RankRunnerOptions;
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
  private router: RouterHandle | undefined;
  private routerStarting = false;
  private stopping = false;
  private stopped = false;
  private routerError: string | undefined;
  private readonly lastProgress = new Map<RankRunner, { phase: string; atMs: number }>();
  afdPort = 0;
  /** Identity of this start (see rendezvousIdOf); set by start(). */
  rendezvousId = '';

  constructor(private readonly opts: TopologyRunOptions) {}

  get launchId(): string {
    return this.opts.launchId;
  }

  get spec(): LaunchSpec {
    return this.opts.spec;
  }

  /** Placements of this agent, FFN ranks first (they listen for the rendezvous). */
  private localPlacements() {
    const order = { ffn: 0, attention: 1, colocated: 2 } as const;
    return this.opts.spec.placements
      .filter((p) => p.agentId === this.opts.agentId)
      .sort((a, b) => order[a.role] - order[b.role] || a.rank - b.rank);
  }

  /** Picks the rendezvous port: the spec's, unless every rank is on this agent and that block is taken. */
  private async chooseAfdPort(): Promise<number> {
    const spec = this.opts.spec;
    if (spec.mode !== 'afd') return 0;
    const ffnRanks = resolveTopology(spec.topology).ffn.ranks;
    const allLocal = spec.placements.every((p) => p.agentId === this.opts.agentId);
    if (!allLocal) return spec.afd.port; // other agents' ranks rely on the agreed port
    const host = hostOfAgent(spec, this.opts.agentId);
    const bindHost = host === '127.0.0.1' ? host : '0.0.0.0';
    for (let f = 0; f < ffnRanks; f++) {
      if (!(await isPortFree(bindHost, spec.afd.port + f))) {
        const base = await freePortBlock(ffnRanks, bindHost);
        this.opts.onNote?.(`AFD port block ${spec.afd.port}..${spec.afd.port + ffnRanks - 1} is in use; using ${base}..${base + ffnRanks - 1} (every rank is on this agent)`);
        return base;
      }
    }
    return spec.afd.port;
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
    this.afdPort = await this.chooseAfdPort();
    this.rendezvousId = this.rendezvousIdOf();
    let spec = this.opts.spec;
    if (spec.modelDir === null && this.opts.prepareDefaultModel) {
      const note = (message: string): void => this.opts.onNote?.(message);
      spec = { ...spec, modelDir: await this.opts.prepareDefaultModel(note) };
    }
    const cpuRanks = placements.filter((p) => p.backend === 'cpu').length;
    const defaultThreads = cpuRanks > 0 ? Math.max(1, Math.floor(availableParallelism() / cpuRanks)) : undefined;
    // Build every child spec first so a bad value fails the launch before anything starts.
    const children = placements.map((p) => ({
      placement: p,
      child: roleChildSpec(this.opts.self, spec, p, {
        agentId: this.opts.agentId,
        afdPort: this.afdPort,
        apiHost: '127.0.0.1', // rank HTTP is for this agent and its front router only
        defaultThreads,
        baseEnv: this.opts.baseEnv,
        ...(this.rendezvousId ? { rendezvousId: this.rendezvousId } : {}),
      }),
    }));
    for (const { placement, child } of children) {
      const id = { role: placement.role, rank: placement.rank };
      const runner = new RankRunner(id, child, (u) => this.onRankUpdate(runner, u), this.opts.runner);
      this.runners.push(runner);
    }
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
        return; // visible in topology.state once ready
      case 'ready':
        this.opts.onEvent({ type: 'rank.ready', ...ref, apiUrl: runner.apiUrl ?? null });
        void this.maybeStartRouter();
        break;
      case 'health':
        break;
      case 'failed':
        this.opts.onEvent({ type: 'rank.failed', ...ref, exitCode: u.exitCode, signal: u.signal, message: u.message, lastLogLines: u.lastLines });
        break;
      case 'exited':
        this.opts.onEvent({ type: 'rank.exited', ...ref, exitCode: u.exitCode, signal: u.signal });
        break;
    }
    this.emitState();
  }

  /** The front router starts once every local attention (or colocated) rank is ready. */
  private async maybeStartRouter(): Promise<void> {
    const factory = this.opts.startRouter;
    if (!factory || this.router || this.routerStarting || this.stopping) return;
    const serving = this.runners.filter((r) => r.id.role !== 'ffn');
    if (serving.length === 0 || serving.some((r) => r.state !== 'ready' || !r.apiUrl)) return;
    this.routerStarting = true;
    try {
      const router = await factory(serving.map((r) => r.apiUrl!), this.opts.routerHost ?? '127.0.0.1', this.opts.spec.apiPort);
      if (this.stopping) await router.close();
      else this.router = { url: advertisedUrl(router.url, this.opts.advertiseHost), close: () => router.close() };
    } catch (e) {
      this.routerError = `front router could not start on port ${this.opts.spec.apiPort}: ${(e as Error).message}. Choose another apiPort`;
      this.opts.onNote?.(this.routerError);
    } finally {
      this.routerStarting = false;
    }
    this.emitState();
  }

  get routerUrl(): string | null {
    return this.router?.url ?? null;
  }

  /** Aggregate state of this agent's ranks. */
  get runState(): RunState {
    if (this.stopped) return 'stopped';
    if (this.stopping) return 'stopping';
    if (this.runners.some((r) => r.state === 'failed') || this.routerError) return 'failed';
    const routerPending = this.opts.startRouter !== undefined && this.runners.some((r) => r.id.role !== 'ffn') && !this.router;
    if (this.runners.length > 0 && this.runners.every((r) => r.state === 'ready') && !routerPending) return 'running';
    return 'launching';
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
      };
    });
  }

  snapshot(): TopologyState {
    return {
      launchId: this.opts.launchId,
      state: this.runState,
      spec: this.opts.spec,
      ranks: this.rankStates(),
      routerUrl: this.routerUrl,
      ...(this.routerError ? { message: this.routerError } : {}),
    };
  }

  private emitState(): void {
    this.opts.onEvent({ type: 'topology.state', state: this.snapshot() });
  }

  rank(role: RankState['role'], rank: number): RankRunner | undefined {
    return this.runners.find((r) => r.id.role === role && r.id.rank === rank);
  }

  /** Stops the router, then attention/colocated ranks (they tell FFN ranks to shut down), then FFN ranks. */
  async stop(graceMs = 10_000): Promise<void> {
    if (this.stopped) return;
    this.stopping = true;
    // FFN ranks may leave on their own once attention sends the shutdown flag: not a failure.
    for (const r of this.runners) r.expectStop();
    this.emitState();
    if (this.router) {
      await this.router.close().catch(() => undefined);
      this.router = undefined;
    }
    await Promise.all(this.runners.filter((r) => r.id.role !== 'ffn').map((r) => r.stop(graceMs)));
    await Promise.all(this.runners.filter((r) => r.id.role === 'ffn').map((r) => r.stop(graceMs)));
    this.stopped = true;
    this.emitState();
  }
}
