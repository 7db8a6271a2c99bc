/**
 * The agent's launches: at most one at a time (stop before launching another). Turns
 * protocol requests (topology.launch / stop / restart, logs.get) into TopologyRun calls
 * and fans its events out to listeners (the WebSocket sessions, the CLI).
 */
import type { AgentEvent, AgentParams, AgentResult, GpuSharingMode, LogLine, ProcessRole, TopologyState } from '@afd/shared';
import { MpsHost } from '../gpu/MpsHost.js';
import { afdHome } from '../util/afdHome.js';
import { TopologyRun, type RouterFactory } from '../launch/TopologyRun.js';
import type { RankRunnerOptions } from '../launch/RankRunner.js';
import type { RingLine } from '../launch/LogRing.js';
import { toLogLine } from '../launch/logLine.js';
import type { SelfCommand } from '../util/self.js';
import type { HostMemory } from '../util/hostMemory.js';
import { RequestLog } from '../serving/router/RequestLog.js';

/** A request the agent refuses, with the protocol's error code. */
export class AgentRequestError extends Error {
  constructor(
    readonly code: 'bad-request' | 'not-found' | 'busy' | 'launch-failed' | 'internal',
    message: string,
  ) {
    super(message);
    this.name = 'AgentRequestError';
  }
}

export interface LaunchManagerOptions {
  self: SelfCommand;
  /** Environment of role processes (default: the agent's own). */
  baseEnv?: NodeJS.ProcessEnv;
  startRouter?: RouterFactory;
  /** Creates/locates the built-in model once per launch when the spec names no model. */
  prepareDefaultModel?: (onMessage: (message: string) => void) => Promise<string>;
  routerHost?: string;
  /** This agent's advertised address: replaces a wildcard in the router's URL. */
  advertiseHost?: string;
  runner?: RankRunnerOptions;
  /** What this host has left for the ranks (default: read at each launch); tests pass their own. */
  hostMemory?: () => HostMemory | null;
  /** How ranks that share a GPU run when a launch says auto (`serve --gpu-sharing`; default auto). */
  gpuSharing?: GpuSharingMode;
  /** The host's CUDA MPS (default: the control program on PATH, the daemon under $AFD_HOME/mps of baseEnv). */
  mps?: MpsHost;
  onNote?: (message: string) => void;
}

export type LaunchListener = (event: AgentEvent) => void;
export type RawLogListener = (role: ProcessRole, rank: number, line: RingLine) => void;

export class LaunchManager {
  /** The requests this agent's front routers served, across launches (the newest 500). */
  readonly requests = new RequestLog();
  private run: TopologyRun | undefined;
  private lastLaunch: AgentParams<'topology.launch'> | undefined;
  private readonly listeners = new Set<LaunchListener>();
  private readonly logListeners = new Set<RawLogListener>();
  private busy: Promise<unknown> = Promise.resolve();
  /** One per agent process: launches share its daemon. */
  readonly mps: MpsHost;

  constructor(private readonly opts: LaunchManagerOptions) {
    const env = opts.baseEnv ?? process.env;
    this.mps = opts.mps ?? new MpsHost({ home: afdHome(env), env });
  }

  /** Subscribes to every event of every launch; returns the unsubscribe function. */
  onEvent(listener: LaunchListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Subscribes to raw log lines of every rank. */
  onLog(listener: RawLogListener): () => void {
    this.logListeners.add(listener);
    return () => this.logListeners.delete(listener);
  }

  private emit(event: AgentEvent): void {
    for (const l of this.listeners) l(event);
  }

  /** Serialises launch/stop/restart so two clients cannot interleave them. */
  private exclusive<T>(fn: () => Promise<T>): Promise<T> {
    const next = this.busy.then(fn, fn);
    this.busy = next.catch(() => undefined);
    return next;
  }

  state(): TopologyState {
    return this.run?.snapshot() ?? { launchId: null, state: 'idle', spec: null, ranks: [], routerUrl: null, gpus: [] };
  }

  get current(): TopologyRun | undefined {
    return this.run;
  }

  launch(params: AgentParams<'topology.launch'>): Promise<AgentResult<'topology.launch'>> {
    return this.exclusive(async () => {
      const now = this.run?.runState;
      if (now === 'launching' || now === 'running' || now === 'failed' || now === 'stopping') {
        throw new AgentRequestError('busy', `launch ${this.run!.launchId} is ${now} on this agent; send topology.stop first`);
      }
      const local = params.spec.placements.filter((p) => p.agentId === params.agentId);
      if (local.length === 0) {
        const ids = [...new Set(params.spec.placements.map((p) => p.agentId))].join(', ');
        throw new AgentRequestError('bad-request', `no placement has agentId "${params.agentId}" (placements name: ${ids}); nothing would run on this agent`);
      }
      const run = new TopologyRun({
        launchId: params.launchId,
        agentId: params.agentId,
        spec: params.spec,
        self: this.opts.self,
        baseEnv: this.opts.baseEnv ?? process.env,
        apiKey: params.apiKey,
        startRouter: this.opts.startRouter,
        routerHost: this.opts.routerHost,
        advertiseHost: this.opts.advertiseHost,
        prepareDefaultModel: this.opts.prepareDefaultModel,
        runner: this.opts.runner,
        requestLog: this.requests,
        hostMemory: this.opts.hostMemory,
        mps: this.mps,
        gpuSharing: this.opts.gpuSharing,
        onEvent: (e) => this.emit(e),
        onLog: (role, rank, line) => {
          for (const l of this.logListeners) l(role, rank, line);
        },
        onNote: this.opts.onNote,
      });
      this.run = run;
      this.lastLaunch = params;
      try {
        const numRanks = await run.start();
        return { launchId: params.launchId, numRanks };
      } catch (e) {
        await run.stop(1000);
        throw new AgentRequestError('launch-failed', `launch ${params.launchId} failed to start: ${(e as Error).message}`);
      }
    });
  }

  stop(graceMs = 10_000): Promise<AgentResult<'topology.stop'>> {
    return this.exclusive(async () => {
      const run = this.run;
      if (!run || run.runState === 'stopped') return { stopped: false };
      await run.stop(graceMs);
      return { stopped: true };
    });
  }

  async restart(): Promise<AgentResult<'topology.restart'>> {
    const last = this.lastLaunch;
    if (!last) throw new AgentRequestError('not-found', 'nothing was launched on this agent yet; send topology.launch');
    await this.stop();
    await this.launch(last);
    return { launchId: last.launchId };
  }

  /**
   * Changes the restart policy of the launch this agent runs, live; topology.restart then
   * relaunches with it. Refuses a launch id that is not the current one, and a launch that
   * is stopping or stopped (nothing is left to restart).
   */
  setRestartPolicy(params: AgentParams<'topology.setRestartPolicy'>): AgentResult<'topology.setRestartPolicy'> {
    const { launchId, ...change } = params;
    const run = this.run;
    if (!run) throw new AgentRequestError('not-found', `no launch ${launchId} on this agent: nothing was launched here yet`);
    if (run.launchId !== launchId) throw new AgentRequestError('not-found', `no launch ${launchId} on this agent: it runs launch ${run.launchId} (${run.runState})`);
    const state = run.runState;
    if (state === 'stopping' || state === 'stopped') throw new AgentRequestError('bad-request', `launch ${launchId} is ${state} on this agent: its restart policy can no longer change (launch it again with the policy wanted)`);
    const restart = { ...run.spec.restart, ...change };
    run.setRestartPolicy(restart);
    if (this.lastLaunch?.launchId === launchId) this.lastLaunch = { ...this.lastLaunch, spec: { ...this.lastLaunch.spec, restart } };
    return { launchId, restart };
  }

  logs(role: ProcessRole, rank: number, tail: number): LogLine[] {
    const runner = this.run?.rank(role, rank);
    if (!runner) {
      const have = this.run?.runners.map((r) => `${r.id.role} ${r.id.rank}`).join(', ') || 'none';
      throw new AgentRequestError('not-found', `${role} rank ${rank} does not run on this agent (ranks here: ${have})`);
    }
    return runner.logs.since(0, tail).map(toLogLine);
  }
}
