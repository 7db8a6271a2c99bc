/**
 * The state of the console's current launch, merged from every agent involved: each
 * agent reports only its own ranks (topology.state and rank.* events); this turns them
 * into one `launch.progress` payload for the renderer.
 */
import { failureTail, prettyLogLine, type AgentEvent, type LaunchProgress, type LaunchSpec, type RankState, type RestartPolicy, type ServedModelInfo, type TopologyState } from '@afd/shared';

function key(role: string, rank: number): string {
  return `${role}:${rank}`;
}

function pendingRank(p: LaunchSpec['placements'][number]): RankState {
  return { role: p.role, rank: p.rank, agentId: p.agentId, state: 'pending', pid: null, apiUrl: null, progress: null, exitCode: null, message: null };
}


/** Ranks that serve the OpenAI API (prefill ranks only prefill for attention ranks; FFN ranks serve none). */
const servesApi = (role: string): boolean => role === 'attention' || role === 'colocated';
export class LaunchTracker {
  private readonly ranks = new Map<string, RankState>();
  private readonly routerUrls = new Map<string, string>();
  /** Whether each agent's front router requires an API key (as it says). */
  private readonly routerKeys = new Map<string, boolean>();
  /** Each agent's GPUs in this launch, as its topology.state says. */
  private readonly gpus = new Map<string, TopologyState['gpus']>();
  /** Each agent's own view of this launch (running only once its ranks and router are up). */
  private readonly agentStates = new Map<string, string>();
  private stopRequested = false;
  private readonly stoppedAgents = new Set<string>();
  /** Set when an agent refused the launch. */
  private launchError: string | null = null;
  /** The first failure's summary: a failed launch stays failed (with this message) until restarted. */
  private failure: string | null = null;
  private cleanup: LaunchProgress['cleanup'] = null;
  private endedBeforeCleanup = new Set<string>();
  /** Under restart policy on-failure: the last rank death the agents recover from, one line. */
  private lastCause: string | null = null;
  /** The restart policy in effect: the spec's, then what the agents report (the Launch screen's switch changes it live). */
  private restart: RestartPolicy;
  /** What the API at `url` said it serves (ConsoleService asks once the launch runs). */
  private served: { url: string; model: ServedModelInfo | null; modelId: string | null } | null = null;

  constructor(
    readonly launchId: string,
    readonly spec: LaunchSpec,
  ) {
    for (const p of spec.placements) this.ranks.set(key(p.role, p.rank), pendingRank(p));
    this.restart = spec.restart;
  }

  /** The restart policy in effect. */
  get restartPolicy(): RestartPolicy {
    return this.restart;
  }

  /** Every agent of the launch accepted a new restart policy (their topology.state says so too). */
  setRestartPolicy(policy: RestartPolicy): void {
    this.restart = policy;
  }

  /** Agents that run at least one rank of this launch. */
  agentIds(): string[] {
    return [...new Set(this.spec.placements.map((p) => p.agentId))];
  }

  /** Applies one event from `agentId`; returns true when the progress changed. */
  apply(agentId: string, event: AgentEvent): boolean {
    switch (event.type) {
      case 'topology.state': {
        const st = event.state;
        if (st.launchId !== this.launchId) {
          if (this.stopRequested && (st.state === 'idle' || st.state === 'stopped')) this.stoppedAgents.add(agentId);
          return this.stopRequested;
        }
        for (const r of st.ranks) {
          const prev = this.ranks.get(key(r.role, r.rank));
          // Keep the richer failure message (with last log lines) from rank.failed.
          const message = r.state === 'failed' && prev?.state === 'failed' && prev.message ? prev.message : r.message;
          this.ranks.set(key(r.role, r.rank), { ...r, agentId, message });
        }
        if (st.spec) this.restart = st.spec.restart;
        if (st.routerUrl) this.routerUrls.set(agentId, st.routerUrl);
        if (st.apiKeyRequired !== undefined) this.routerKeys.set(agentId, st.apiKeyRequired);
        // The agent reports its GPUs under the id it runs as; the console knows it as agentId.
        this.gpus.set(agentId, st.gpus.map((g) => ({ ...g, agentId })));
        this.agentStates.set(agentId, st.state);
        if (st.state === 'stopped' || st.state === 'idle') this.stoppedAgents.add(agentId);
        else this.stoppedAgents.delete(agentId);
        return true;
      }
      case 'rank.started':
        return this.patch(event.launchId, event.role, event.rank, { state: 'starting', pid: event.pid });
      case 'rank.progress':
        return this.patch(event.launchId, event.role, event.rank, {
          state: event.phase,
          progress: { phase: event.phase, bytesDone: event.bytesDone, bytesTotal: event.bytesTotal },
        });
      case 'rank.ready':
        return this.patch(event.launchId, event.role, event.rank, { state: 'ready', apiUrl: event.apiUrl });
      case 'rank.failed': {
        // The agent's message already says how it ended ("exited with code 1", "was killed by SIGKILL").
        const lines = failureTail(event.message, event.lastLogLines).map(prettyLogLine);
        const tail = lines.length > 0 ? `\nlast log lines:\n${lines.join('\n')}` : '';
        const r = event.launchId === this.launchId ? this.ranks.get(key(event.role, event.rank)) : undefined;
        if (r && this.restart.policy === 'on-failure') this.lastCause = firstLine(rankFailure({ ...r, message: event.message }));
        return this.patch(event.launchId, event.role, event.rank, { state: 'failed', exitCode: event.exitCode, message: `${event.message}${tail}` });
      }
      case 'rank.exited':
        return this.patch(event.launchId, event.role, event.rank, (r) => (r.state === 'failed' ? {} : { state: 'exited', exitCode: event.exitCode }));
      default:
        return false;
    }
  }

  private patch(launchId: string, role: string, rank: number, change: Partial<RankState> | ((r: RankState) => Partial<RankState>)): boolean {
    if (launchId !== this.launchId) return false;
    const r = this.ranks.get(key(role, rank));
    if (!r) return false;
    this.ranks.set(key(role, rank), { ...r, ...(typeof change === 'function' ? change(r) : change) });
    return true;
  }

  /** An agent refused to launch its part. */
  failLaunch(agentId: string, message: string): void {
    this.launchError = `agent ${agentId} could not launch its ranks: ${message}`;
    for (const [k, r] of this.ranks) {
      if (r.agentId === agentId && r.state === 'pending') this.ranks.set(k, { ...r, state: 'failed', message });
    }
  }

  /** Whether the console should stop what is left of this launch: it failed and nobody cleaned up yet. */
  get needsCleanup(): boolean {
    return this.cleanup === null && !this.stopRequested && this.progress().state === 'failed';
  }

  /** Starts the clean-up after a failure (the console then stops every agent's part). */
  beginCleanup(): void {
    this.endedBeforeCleanup = new Set([...this.ranks].filter(([, r]) => r.state === 'failed' || r.state === 'exited').map(([k]) => k));
    this.cleanup = { state: 'stopping', stopped: this.stoppedByCleanup(), problems: [] };
  }

  /** Every agent answered the clean-up's stop (`problems`: the ones whose stop failed). */
  endCleanup(problems: string[]): void {
    if (this.cleanup) this.cleanup = { state: 'done', stopped: this.stoppedByCleanup(), problems };
  }

  /** Ranks that had started and were still up when the clean-up began, per agent. */
  private stoppedByCleanup(): string[] {
    const byAgent = new Map<string, string[]>();
    for (const [k, r] of this.ranks) {
      if (r.pid === null || r.state === 'failed' || this.endedBeforeCleanup.has(k)) continue;
      byAgent.set(r.agentId, [...(byAgent.get(r.agentId) ?? []), `${r.role} ${r.rank}`]);
    }
    return [...byAgent].map(([agent, ranks]) => `agent ${agent}: ${ranks.join(', ')}`);
  }

  markStopping(): void {
    this.stopRequested = true;
    this.stoppedAgents.clear();
  }

  /** An agent answered topology.stop. */
  markAgentStopped(agentId: string): void {
    this.stoppedAgents.add(agentId);
    for (const [k, r] of this.ranks) if (r.agentId === agentId && r.state !== 'failed') this.ranks.set(k, { ...r, state: 'exited' });
  }

  /** The model the API at `url` serves (null: it did not say) and its id (null: it listed none). */
  setServedModel(url: string, model: ServedModelInfo | null, modelId: string | null = null): void {
    this.served = { url, model, modelId };
  }

  /** The router URL whose model is not known yet, when running; else null. */
  modelToFetch(): string | null {
    const p = this.progress();
    return p.state === 'running' && p.routerUrl && this.served?.url !== p.routerUrl ? p.routerUrl : null;
  }

  /** A restart relaunches the same spec: forget failures and stops. */
  markRestarting(): void {
    this.served = null;
    this.stopRequested = false;
    this.stoppedAgents.clear();
    this.launchError = null;
    this.failure = null;
    this.lastCause = null;
    this.cleanup = null;
    this.agentStates.clear();
    this.routerUrls.clear();
    this.routerKeys.clear();
    for (const p of this.spec.placements) this.ranks.set(key(p.role, p.rank), pendingRank(p));
  }

  get isStopped(): boolean {
    return this.stopRequested && this.agentIds().every((a) => this.stoppedAgents.has(a));
  }

  /** The agent whose front router is the OpenAI endpoint: the one running attention rank 0 when several have one. */
  private routerAgent(): string | undefined {
    const first = this.spec.placements.find((p) => servesApi(p.role) && p.rank === 0);
    if (first && this.routerUrls.has(first.agentId)) return first.agentId;
    return this.routerUrls.keys().next().value;
  }

  /** The OpenAI endpoint: the front router (of the agent running attention rank 0 when several), else the first attention/colocated rank's API. */
  routerUrl(): string | null {
    const agent = this.routerAgent();
    if (agent) return this.routerUrls.get(agent)!;
    const ranks = [...this.ranks.values()].filter((r) => servesApi(r.role) && r.state === 'ready' && r.apiUrl);
    ranks.sort((a, b) => a.rank - b.rank);
    return ranks[0]?.apiUrl ?? null;
  }

  progress(): LaunchProgress {
    const ranks = this.spec.placements.map((p) => this.ranks.get(key(p.role, p.rank)) ?? pendingRank(p));
    const failed = ranks.filter((r) => r.state === 'failed');
    // With restart policy on-failure the agents bring a dead rank back: the launch fails only when an agent gives up.
    const rankFailures = this.restart.policy === 'on-failure' ? [] : failed;
    if (!this.failure && (rankFailures.length > 0 || this.launchError || [...this.agentStates.values()].includes('failed'))) {
      const agent = [...this.agentStates].find(([, st]) => st === 'failed')?.[0];
      // One line: a rank's last log lines stay in its own message (its row on the Launch screen).
      this.failure = firstLine(this.launchError ?? (failed[0] ? rankFailure(failed[0]) : `agent ${agent ?? '?'} reports the launch failed (see its log; e.g. the API port may be taken)`));
    }
    let state: LaunchProgress['state'];
    if (this.stopRequested) state = this.isStopped ? 'stopped' : 'stopping';
    else if (this.failure) state = 'failed';
    else if (ranks.every((r) => r.state === 'ready') && this.agentIds().every((a) => this.agentStates.get(a) === 'running')) state = 'running';
    else state = 'launching';
    const message = state === 'failed' ? this.failure : null;
    const routerUrl = state === 'running' ? this.routerUrl() : null;
    const served = routerUrl && this.served?.url === routerUrl ? this.served : null;
    const model = served?.model ?? null;
    const modelId = served?.modelId ?? null;
    const router = this.routerAgent();
    const apiKeyRequired = routerUrl && router ? (this.routerKeys.get(router) ?? null) : null;
    const gpus = this.agentIds().flatMap((a) => this.gpus.get(a) ?? []);
    const restarts = ranks.reduce((n, r) => n + (r.restarts ?? 0), 0);
    const recovery = restarts > 0 || this.lastCause ? { recovery: { restarts, lastCause: this.lastCause } } : {};
    return { launchId: this.launchId, state, ranks, routerUrl, message, cleanup: this.cleanup, model, modelId, apiKeyRequired, gpus, ...recovery, restart: this.restart };
  }
}

/** "ffn rank 1 on agent b exited with code 1: why", from the agent's "ffn rank 1 exited with code 1: why". */
function rankFailure(r: RankState): string {
  const who = `${r.role} rank ${r.rank}`;
  const why = r.message ?? 'failed (no reason given)';
  return why.startsWith(`${who} `) ? `${who} on agent ${r.agentId} ${why.slice(who.length + 1)}` : `${who} on agent ${r.agentId} failed: ${why}`;
}

const firstLine = (text: string): string => text.split('\n', 1)[0]!;
