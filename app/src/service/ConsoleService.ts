/**
 * The console's brain, with no Electron in it: agent connections, launch orchestration
 * across agents, metrics/log/request-log forwarding and chat against the topology's API. Electron's
 * main process and the browser-mode web host both put the same bridge in front of it:
 * `invoke(channel, payload)` validates and answers requests; `subscribe(sink)` receives
 * every push.
 */
import { randomUUID } from 'node:crypto';
import {
  planTopology,
  validateBridgeRequest,
  validateBridgeResponse,
  validateTopology,
  type AgentEvent,
  type AgentInfo,
  type BridgeInvokeChannel,
  type BridgePush,
  type BridgePushChannel,
  type BridgeRequest,
  type BridgeResponse,
  type LaunchSpec,
} from '@afd/shared';
import { AgentConnection } from './AgentConnection.js';
import { ChatRunner, type PushFn } from './ChatRunner.js';
import { LaunchTracker } from './LaunchTracker.js';
import { requestEachAgent, setLaunchRestartPolicy, type ConnectionOf } from './launchAgents.js';
import { RequestLogs } from './RequestLogs.js';
import { MetricsHistory } from './MetricsHistory.js';
import { readServedModel, type ServedModel } from './servedModel.js';
import { checkPlacements } from '../common/placementCheck.js';
import { withAgentHosts } from './agentHosts.js';

interface AgentEntry {
  agentId: string;
  conn: AgentConnection;
  inventory: AgentInfo['inventory'];
  topology: AgentInfo['topology'];
}

type Handlers = { [C in BridgeInvokeChannel]: (req: BridgeRequest<C>) => Promise<BridgeResponse<C>> };

export interface ConsoleServiceOptions {
  /** Where diagnostics go (default: stderr). */
  log?: (message: string) => void;
  /** How long agents.add waits for the first connection, ms. */
  connectTimeoutMs?: number;
  /** Metrics period requested from agents, ms. */
  metricsIntervalMs?: number;
  /** CA certificates (PEM) trusted for wss:// agents (start's --ca-file); default the system CAs. */
  ca?: (string | Buffer)[];
  /**
   * API key of the launches (start's --api-key, default $AFD_API_KEY): sent with each
   * topology.launch (agents need one for a front router off loopback) and used by the
   * Playground. Undefined: the agents' own $AFD_API_KEY, if any, and an open API otherwise.
   */
  apiKey?: string;
}

export class ConsoleService {
  private readonly agents = new Map<string, AgentEntry>();
  private readonly sinks = new Set<PushFn>();
  private launch: LaunchTracker | null = null;
  private readonly chats = new Map<string, ChatRunner>();
  private readonly requestLogs = new RequestLogs();
  /** The Dashboard's chart history of the current launch (handed to renderers as they load). */
  private readonly metricsHistory = new MetricsHistory();
  private readonly log: (message: string) => void;
  private readonly handlers: Handlers;

  constructor(private readonly opts: ConsoleServiceOptions = {}) {
    this.log = opts.log ?? ((m) => process.stderr.write(`[console] ${m}\n`));
    this.handlers = {
      'agents.add': (r) => this.addAgent(r.url, r.token),
      'agents.remove': async (r) => {
        this.removeAgent(r.agentId);
        return {};
      },
      'agents.list': async () => ({ agents: this.agentInfos() }),
      'topology.validate': async (r) => {
        const v = validateTopology(r.topology);
        return v.ok ? { valid: true, problems: [], plan: planTopology(v.topology) } : { valid: false, problems: v.problems, plan: null };
      },
      'model.inspect': (r) => this.entry(r.agentId).conn.request('model.inspect', { dir: r.dir }, 20_000),
      'plan.profiles': (r) => this.entry(r.agentId).conn.request('plan.profiles', {}, 20_000),
      'topology.launch': (spec) => this.launchTopology(spec),
      'topology.stop': () => this.stopTopology(),
      'topology.restart': () => this.restartTopology(),
      'topology.setRestartPolicy': (r) => setLaunchRestartPolicy(this.launch, this.connOf, r).finally(() => this.pushLaunch()),
      'launch.get': async () => ({ launch: this.launch?.progress() ?? null }),
      'logs.get': async (r) => this.entry(r.agentId).conn.request('logs.get', { role: r.role, rank: r.rank, tail: r.tail }),
      'chat.start': async (r) => this.startChat(r),
      'requests.list': async () => ({ requests: this.requestLogs.list() }),
      'metrics.history': async () => this.metricsHistory.data(),
      'requests.get': (r) => this.entry(r.agentId).conn.request('requests.get', { id: r.id }),
      'api.key': async (r) => ({ held: this.opts.apiKey !== undefined, apiKey: r.reveal ? (this.opts.apiKey ?? null) : null }),
      'chat.stop': async (r) => {
        const runner = this.chats.get(r.chatId);
        runner?.stop();
        return { stopped: runner !== undefined };
      },
    };
  }

  /** Receives every push; returns the unsubscribe function. */
  subscribe(sink: PushFn): () => void {
    this.sinks.add(sink);
    return () => this.sinks.delete(sink);
  }

  private readonly push: PushFn = <C extends BridgePushChannel>(channel: C, payload: BridgePush<C>) => {
    for (const sink of this.sinks) {
      try {
        sink(channel, payload);
      } catch (e) {
        this.log(`push to a renderer failed: ${(e as Error).message}`);
      }
    }
  };

  /**
   * Handles one bridge call from an untrusted renderer: validates the request, runs the
   * handler, validates the response. Rejects with a message fit for the UI.
   */
  async invoke(channel: string, payload: unknown): Promise<unknown> {
    const req = validateBridgeRequest(channel, payload);
    if (!req.ok) throw new Error(req.error);
    const handler = this.handlers[channel as BridgeInvokeChannel] as (r: unknown) => Promise<unknown>;
    const res = await handler(req.value);
    const checked = validateBridgeResponse(channel as BridgeInvokeChannel, res);
    if (!checked.ok) throw new Error(`console bug: ${checked.error}`);
    return checked.value;
  }

  /** Typed call for in-process callers (the launcher). */
  call<C extends BridgeInvokeChannel>(channel: C, request: unknown): Promise<BridgeResponse<C>> {
    return this.invoke(channel, request) as Promise<BridgeResponse<C>>;
  }

  // ---- agents ----

  agentInfos(): AgentInfo[] {
    return [...this.agents.values()].map((e) => ({
      agentId: e.agentId,
      url: e.conn.url,
      state: e.conn.state,
      message: e.conn.message,
      inventory: e.inventory,
      topology: e.topology,
      latencyMs: e.conn.latencyMs,
    }));
  }

  private pushAgents(): void {
    this.push('agents.state', { agents: this.agentInfos() });
  }

  private readonly connOf: ConnectionOf = (agentId) => this.agents.get(agentId)?.conn;

  private entry(agentId: string): AgentEntry {
    const e = this.agents.get(agentId);
    if (!e) throw new Error(`no agent "${agentId}" is connected; add it on the Agents screen`);
    return e;
  }

  /** Connects to an agent; `agentId` defaults to its host name (deduplicated). */
  async addAgent(url: string, token: string, agentId?: string): Promise<AgentInfo> {
    const normalized = url.replace(/\/+$/, '');
    for (const e of this.agents.values()) {
      if (e.conn.url === normalized) throw new Error(`agent ${normalized} is already added (as "${e.agentId}")`);
    }
    // Filled once connected; the connection's callbacks fire only after that.
    const ref: { entry?: AgentEntry } = {};
    const conn = new AgentConnection({
      url: normalized,
      token,
      ca: this.opts.ca,
      onEvent: (ev) => {
        if (ref.entry) this.onAgentEvent(ref.entry, ev);
      },
      onStatus: () => {
        if (ref.entry && this.agents.has(ref.entry.agentId)) this.pushAgents();
      },
    });
    const timeoutMs = this.opts.connectTimeoutMs ?? 10_000;
    try {
      await Promise.race([
        conn.connect(),
        new Promise((_, reject) => setTimeout(() => reject(new Error(`agent at ${normalized} did not answer within ${timeoutMs} ms: check the URL and that the agent is running`)), timeoutMs)),
      ]);
    } catch (e) {
      conn.close();
      throw e;
    }
    const id = agentId ?? this.uniqueId(conn.hostname ?? 'agent');
    const entry: AgentEntry = { agentId: id, conn, inventory: null, topology: null };
    ref.entry = entry;
    this.agents.set(id, entry);
    await this.onConnected(entry);
    this.pushAgents();
    return this.agentInfos().find((a) => a.agentId === id)!;
  }

  private uniqueId(base: string): string {
    const clean = base.replace(/[^A-Za-z0-9._-]/g, '-') || 'agent';
    if (!this.agents.has(clean)) return clean;
    for (let i = 2; ; i++) if (!this.agents.has(`${clean}-${i}`)) return `${clean}-${i}`;
  }

  /** After (re)connecting: inventory, metric, log and request-log streams. */
  private async onConnected(e: AgentEntry): Promise<void> {
    try {
      e.inventory = await e.conn.request('inventory.get', {});
      await e.conn.request('metrics.subscribe', { intervalMs: this.opts.metricsIntervalMs ?? 100 });
      await e.conn.request('logs.subscribe', {});
      const { requests } = await e.conn.request('requests.subscribe', {});
      this.requestLogs.replace(e.agentId, requests);
      this.push('requests.logged', { agentId: e.agentId, requests, replace: true });
    } catch (err) {
      this.log(`agent ${e.agentId}: setup after connect failed: ${(err as Error).message}`);
    }
    this.pushAgents();
  }

  removeAgent(agentId: string): void {
    const e = this.entry(agentId);
    if (this.launch?.agentIds().includes(agentId) && !this.launch.isStopped) {
      throw new Error(`agent "${agentId}" runs ranks of the current launch; stop the topology before removing it`);
    }
    e.conn.close();
    this.agents.delete(agentId);
    this.requestLogs.remove(agentId);
    this.pushAgents();
  }

  private onAgentEvent(e: AgentEntry, ev: AgentEvent): void {
    switch (ev.type) {
      case 'hello':
        // A reconnect (the first hello is handled by addAgent).
        if (this.agents.has(e.agentId)) void this.onConnected(e);
        return;
      case 'topology.state':
        e.topology = ev.state;
        this.adoptLaunch(ev.state);
        this.pushAgents();
        break;
      case 'log.lines':
        this.push('logs.lines', { agentId: e.agentId, role: ev.role, rank: ev.rank, lines: ev.lines });
        return;
      case 'metrics.snapshot':
        if (!this.launch || ev.launchId !== this.launch.launchId) return;
        this.metricsHistory.add(ev.launchId, ev.snapshot);
        this.push('metrics.snapshot', { agentId: e.agentId, launchId: ev.launchId, snapshot: ev.snapshot });
        return;
      case 'requests.logged':
        this.requestLogs.append(e.agentId, ev.requests);
        this.push('requests.logged', { agentId: e.agentId, requests: ev.requests, replace: false });
        return;
      case 'error':
        this.log(`agent ${e.agentId}: ${ev.message}`);
        return;
      default:
        break;
    }
    if (this.launch?.apply(e.agentId, ev)) this.pushLaunch();
  }

  /** A console that (re)starts while an agent runs a launch takes that launch over. */
  private adoptLaunch(state: NonNullable<AgentInfo['topology']>): void {
    if (this.launch || !state.spec || !state.launchId) return;
    if (state.state !== 'launching' && state.state !== 'running') return;
    this.launch = new LaunchTracker(state.launchId, state.spec);
    this.log(`adopted running launch ${state.launchId}`);
  }

  /** Pushes the launch's progress; a launch that just failed gets its remaining ranks stopped. */
  private pushLaunch(): void {
    const tracker = this.launch;
    if (!tracker) return;
    this.push('launch.progress', tracker.progress());
    if (tracker.needsCleanup) void this.cleanUpFailedLaunch(tracker);
    const url = tracker.modelToFetch();
    if (url) void this.fetchServedModel(tracker, url);
  }

  /**
   * A failed launch must not leave ranks behind (e.g. attention ranks waiting at the
   * rendezvous for an FFN rank that could not bind its port): stop every agent's part, and
   * say what was stopped. The launch stays failed, with its first failure as the message.
   */
  private async cleanUpFailedLaunch(tracker: LaunchTracker): Promise<void> {
    tracker.beginCleanup();
    this.push('launch.progress', tracker.progress());
    const { problems } = await this.stopAgents(tracker, 2000);
    tracker.endCleanup(problems);
    if (this.launch === tracker) this.push('launch.progress', tracker.progress());
  }

  /** Asks the running topology's API what it serves (id, name, parameters, description, example prompts), once per URL. */
  private async fetchServedModel(tracker: LaunchTracker, url: string): Promise<void> {
    tracker.setServedModel(url, null);
    let served: ServedModel = { model: null, modelId: null };
    try {
      served = await readServedModel(url, this.opts.apiKey);
    } catch (err) {
      this.log(`could not read ${url}/v1/models: ${(err as Error).message}`);
    }
    if (this.launch !== tracker) return;
    tracker.setServedModel(url, served.model, served.modelId);
    this.push('launch.progress', tracker.progress());
  }

  // ---- launch ----

  currentLaunch(): LaunchTracker | null {
    return this.launch;
  }

  async launchTopology(spec: LaunchSpec): Promise<{ launchId: string }> {
    const current = this.launch?.progress();
    if (current && (current.state === 'launching' || current.state === 'running' || current.state === 'stopping')) {
      throw new Error(`topology launch ${current.launchId} is ${current.state}; stop it on the Launch screen before launching another`);
    }
    // A failed launch still holds its agents (they refuse new launches until stopped): clear it.
    if (current?.state === 'failed') await this.stopTopology(2000).catch((e: Error) => this.log(`before relaunching: ${e.message}`));
    checkPlacements(spec, (id) => {
      const e = this.agents.get(id);
      return e ? { state: e.conn.state, inventory: e.inventory } : undefined;
    });
    // Across agents, each FFN rank is reached at its agent's address (not 127.0.0.1).
    spec = withAgentHosts(spec, (id) => {
      const e = this.agents.get(id);
      return e ? { advertiseHost: e.inventory?.advertiseHost ?? null, url: e.conn.url } : undefined;
    });
    const launchId = `launch-${Date.now().toString(36)}-${randomUUID().slice(0, 6)}`;
    const tracker = new LaunchTracker(launchId, spec);
    this.launch = tracker;
    this.pushLaunch();
    const results = await Promise.allSettled(
      tracker.agentIds().map((agentId) =>
        this.entry(agentId)
          .conn.request('topology.launch', { launchId, agentId, spec, apiKey: this.opts.apiKey }, 60_000)
          .catch((err: Error) => {
            tracker.failLaunch(agentId, err.message);
            throw err;
          }),
      ),
    );
    const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failed) {
      // The push starts the clean-up: no half topology waits for peers that will never come.
      this.pushLaunch();
      throw new Error(`launch failed: ${(failed.reason as Error).message}`);
    }
    this.pushLaunch();
    return { launchId };
  }

  /** Sends topology.stop to every agent of the launch; `problems` names the agents whose stop failed. */
  private async stopAgents(tracker: LaunchTracker, graceMs: number): Promise<{ any: boolean; problems: string[] }> {
    const { answers, problems } = await requestEachAgent(tracker.agentIds(), this.connOf, 'stop', 'topology.stop', { graceMs }, graceMs + 15_000, (id) => tracker.markAgentStopped(id));
    return { any: answers.some((a) => a.result.stopped), problems };
  }

  /** Stops chats and every agent's part of the launch; ranks get `graceMs` to exit. */
  async stopTopology(graceMs = 10_000): Promise<{ stopped: boolean }> {
    const tracker = this.launch;
    if (!tracker) return { stopped: false };
    for (const runner of this.chats.values()) runner.stop();
    tracker.markStopping();
    this.pushLaunch();
    const { any, problems } = await this.stopAgents(tracker, graceMs);
    this.pushLaunch();
    if (problems.length > 0) throw new Error(problems.join('; '));
    return { stopped: any };
  }

  async restartTopology(): Promise<{ launchId: string }> {
    const tracker = this.launch;
    if (!tracker) throw new Error('nothing to restart: launch a topology first');
    for (const runner of this.chats.values()) runner.stop();
    tracker.markRestarting();
    this.pushLaunch();
    await Promise.all(tracker.agentIds().map((id) => this.entry(id).conn.request('topology.restart', {}, 60_000)));
    this.pushLaunch();
    return { launchId: tracker.launchId };
  }

  // ---- chat ----

  private startChat(request: BridgeRequest<'chat.start'>): { chatId: string } {
    const progress = this.launch?.progress();
    if (!progress || progress.state !== 'running') {
      const why = progress ? `the topology is ${progress.state}` : 'no topology is launched';
      throw new Error(`cannot chat: ${why}. Launch one (Topology screen) and wait until every rank is ready`);
    }
    const apiUrl = this.launch?.routerUrl();
    if (!apiUrl) throw new Error('cannot chat: the running topology reported no API URL (no attention rank is listening)');
    const chatId = randomUUID();
    const runner = new ChatRunner({ chatId, apiUrl, request, push: this.push, apiKey: this.opts.apiKey });
    this.chats.set(chatId, runner);
    setImmediate(() => {
      void runner.run().finally(() => this.chats.delete(chatId));
    });
    return { chatId };
  }

  /** Stops chats, optionally the topology, and closes every agent connection. */
  async dispose(opts: { stopTopology?: boolean } = {}): Promise<void> {
    for (const runner of this.chats.values()) runner.stop();
    // Only a real problem is worth a line here (a clean stop says nothing).
    if (opts.stopTopology && this.launch && !this.launch.isStopped) await this.stopTopology().catch((e: Error) => this.log(`stopping the topology: ${e.message}`));
    for (const e of this.agents.values()) e.conn.close();
    this.agents.clear();
    this.sinks.clear();
  }
}
