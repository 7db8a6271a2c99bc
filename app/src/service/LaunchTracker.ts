/**
 * The state of the console's current launch, merged from every agent involved: each
 * agent reports only its own ranks (topology.state and rank.* events); this turns them
 * into one `launch.progress` payload for the renderer.
 */
import type { AgentEvent, LaunchProgress, LaunchSpec, RankState, ServedModelInfo } from '@afd/shared';
import { prettyLogLine } from '../common/prettyLogLine.js';

function key(role: string, rank: number): string {
  return `${role}:${rank}`;
}

function pendingRank(p: LaunchSpec['placements'][number]): RankState {
  return { role: p.role, rank: p.rank, agentId: p.agentId, state: 'pending', pid: null, apiUrl: null, progress: null, exitCode: null, message: null };
}

export class LaunchTracker {
  private readonly ranks = new Map<string, RankState>();
  private readonly routerUrls = new Map<string, string>();
  /** Each agent's own view of this launch (running only once its ranks and router are up). */
  private readonly agentStates = new Map<string, string>();
  private stopRequested = false;
  private readonly stoppedAgents = new Set<string>();
  /** Set when an agent refused the launch. */
  private launchError: string | null = null;
  /** What the API at `url` said it serves (ConsoleService asks once the launch runs). */
  private served: { url: string; model: ServedModelInfo | null } | null = null;

  constructor(
    readonly launchId: string,
    readonly spec: LaunchSpec,
  ) {
    for (const p of spec.placements) this.ranks.set(key(p.role, p.rank), pendingRank(p));
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
        if (st.routerUrl) this.routerUrls.set(agentId, st.routerUrl);
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
        const how = event.exitCode !== null ? `exit code ${event.exitCode}` : event.signal ? `signal ${event.signal}` : 'still running';
        const tail = event.lastLogLines.length > 0 ? `\nlast log lines:\n${event.lastLogLines.map(prettyLogLine).join('\n')}` : '';
        return this.patch(event.launchId, event.role, event.rank, { state: 'failed', exitCode: event.exitCode, message: `${event.message} (${how})${tail}` });
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

  markStopping(): void {
    this.stopRequested = true;
    this.stoppedAgents.clear();
  }

  /** An agent answered topology.stop. */
  markAgentStopped(agentId: string): void {
    this.stoppedAgents.add(agentId);
    for (const [k, r] of this.ranks) if (r.agentId === agentId && r.state !== 'failed') this.ranks.set(k, { ...r, state: 'exited' });
  }

  /** The model the API at `url` serves (null: it did not say). */
  setServedModel(url: string, model: ServedModelInfo | null): void {
    this.served = { url, model };
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
    this.agentStates.clear();
    this.routerUrls.clear();
    for (const p of this.spec.placements) this.ranks.set(key(p.role, p.rank), pendingRank(p));
  }

  get isStopped(): boolean {
    return this.stopRequested && this.agentIds().every((a) => this.stoppedAgents.has(a));
  }

  /** The OpenAI endpoint: the front router (of the agent running attention rank 0 when several), else the first attention/colocated rank's API. */
  routerUrl(): string | null {
    const first = this.spec.placements.find((p) => p.role !== 'ffn' && p.rank === 0);
    const preferred = first ? this.routerUrls.get(first.agentId) : undefined;
    if (preferred) return preferred;
    for (const url of this.routerUrls.values()) return url;
    const ranks = [...this.ranks.values()].filter((r) => r.role !== 'ffn' && r.state === 'ready' && r.apiUrl);
    ranks.sort((a, b) => a.rank - b.rank);
    return ranks[0]?.apiUrl ?? null;
  }

  progress(): LaunchProgress {
    const ranks = this.spec.placements.map((p) => this.ranks.get(key(p.role, p.rank)) ?? pendingRank(p));
    const failed = ranks.filter((r) => r.state === 'failed');
    let state: LaunchProgress['state'];
    if (this.stopRequested) state = this.isStopped ? 'stopped' : 'stopping';
    else if (failed.length > 0 || this.launchError || [...this.agentStates.values()].includes('failed')) state = 'failed';
    else if (ranks.every((r) => r.state === 'ready') && this.agentIds().every((a) => this.agentStates.get(a) === 'running')) state = 'running';
    else state = 'launching';
    let message: string | null = null;
    if (state === 'failed') {
      const first = failed[0];
      const agent = [...this.agentStates].find(([, st]) => st === 'failed')?.[0];
      // One line: a rank's last log lines stay in its own message (its row on the Launch screen).
      message = firstLine(
        this.launchError ??
          (first
            ? `${first.role} rank ${first.rank} on agent ${first.agentId} failed: ${first.message ?? 'no reason given'}`
            : `agent ${agent ?? '?'} reports the launch failed (see its log; e.g. the API port may be taken)`),
      );
    }
    const routerUrl = state === 'running' ? this.routerUrl() : null;
    const model = routerUrl && this.served?.url === routerUrl ? this.served.model : null;
    return { launchId: this.launchId, state, ranks, routerUrl, message, model };
  }
}

const firstLine = (text: string): string => text.split('\n', 1)[0]!;
