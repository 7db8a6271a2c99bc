/**
 * Supervises one rank: its role process (ChildProcessGroup), the JSON-line role events on
 * its stdout, readiness from its /health, and metrics from its /afd/stats at ~10 Hz.
 * Everything it learns is reported as `RankUpdate`s through one callback, in order.
 */
import { rankStatsSchema, servingStatsSchema, type MetricsSnapshot } from '@afd/shared';
import { parseRoleEventLine, type ProcessRole, type RankLifecycle, type RolePhase } from '@afd/shared';
import { ChildProcessGroup, type ChildExit, type ChildSpec } from './ChildProcessGroup.js';
import { LogRing, type RingLine } from './LogRing.js';
import { readHealth, readJson } from './httpProbe.js';

/** Identity of a rank within its launch. */
export interface RankId {
  role: ProcessRole;
  rank: number;
}


export type RankUpdate =
  | { kind: 'started'; pid: number }
  | { kind: 'progress'; phase: RolePhase; bytesDone: number; bytesTotal: number; message?: string }
  | { kind: 'listening'; apiUrl: string }
  | { kind: 'ready' }
  | { kind: 'health'; healthy: boolean; reason: string | null }
  | { kind: 'failed'; exitCode: number | null; signal: string | null; message: string; lastLines: string[] }
  | { kind: 'exited'; exitCode: number | null; signal: string | null }
  | { kind: 'log'; line: RingLine }
  | { kind: 'metrics'; snapshot: MetricsSnapshot };

export interface RankRunnerOptions {
  /** Interval of /health polls before ready (ms). */
  readyPollMs?: number;
  /** Interval of /health polls once ready (ms). */
  healthPollMs?: number;
  /** Interval of /afd/stats polls once ready (ms); ~10 Hz by default. */
  metricsPollMs?: number;
  /** Lines of log kept per rank. */
  logLines?: number;
  /** Lines of log attached to a failure report. */
  failureTailLines?: number;
}

/** The `serving` key of /afd/stats: present on attention/colocated ranks; absent (FFN) or malformed reads as null. */
const servingKeySchema = servingStatsSchema.nullable().catch(null);

/**
 * Reads a role's /afd/stats: its RankStats, with `serving` added on attention/colocated
 * ranks (zod drops unknown keys, so `serving` is read on its own). Undefined when the body
 * is not a RankStats.
 */
export function parseStatsBody(body: unknown, timestampMs: number): MetricsSnapshot | undefined {
  const stats = rankStatsSchema.safeParse(body);
  if (!stats.success) return undefined;
  return { timestampMs, stats: stats.data, serving: servingKeySchema.parse((body as { serving?: unknown }).serving) };
}

export class RankRunner {
  private group: ChildProcessGroup | undefined;
  readonly logs: LogRing;
  private stateValue: RankLifecycle = 'pending';
  private startedAt: number | undefined;
  private messageValue: string | null = null;
  private apiUrlValue: string | undefined;
  private lastFailedMessage: string | undefined;
  private timers: NodeJS.Timeout[] = [];
  private polling = false;
  private readonly opts: Required<RankRunnerOptions>;
  private exitPromise: Promise<ChildExit> | undefined;
  /** Set when the topology is stopping: an exit now is expected (an FFN rank leaves on the shutdown flag). */
  private stopExpected = false;
  /** Latest progress per phase (for late subscribers). */
  readonly progress = new Map<RolePhase, { bytesDone: number; bytesTotal: number }>();

  constructor(
    readonly id: RankId,
    private readonly spec: ChildSpec,
    private readonly onUpdate: (update: RankUpdate) => void,
    options: RankRunnerOptions = {},
  ) {
    this.opts = {
      readyPollMs: options.readyPollMs ?? 200,
      healthPollMs: options.healthPollMs ?? 1000,
      metricsPollMs: options.metricsPollMs ?? 100,
      logLines: options.logLines ?? 2000,
      failureTailLines: options.failureTailLines ?? 20,
    };
    this.logs = new LogRing({ maxLines: this.opts.logLines });
  }

  get state(): RankLifecycle {
    return this.stateValue;
  }

  /** Status detail: why it failed, or why /health says it is not serving; null when none. */
  get message(): string | null {
    return this.messageValue;
  }

  /** Exit code once exited or failed. */
  exitCode: number | null = null;

  get apiUrl(): string | undefined {
    return this.apiUrlValue;
  }

  get pid(): number | undefined {
    return this.group?.pid;
  }

  /** When the current process was spawned (Date.now()); undefined before the first start. */
  get startedAtMs(): number | undefined {
    return this.startedAt;
  }

  /** Spawns the role process; updates follow through the callback. */
  start(): void {
    if (this.group?.running) throw new Error(`${this.id.role} rank ${this.id.rank} is already running`);
    this.stateValue = 'starting';
    this.stopExpected = false;
    this.messageValue = null;
    this.exitCode = null;
    this.apiUrlValue = undefined;
    this.lastFailedMessage = undefined;
    this.progress.clear();
    this.group = new ChildProcessGroup(
      this.spec,
      {
        onStdoutLine: (text) => this.onStdout(text),
        onLog: (line) => this.onUpdate({ kind: 'log', line }),
        onExit: (exit) => this.onExit(exit),
      },
      this.logs,
    );
    this.exitPromise = this.group.waitExit();
    const pid = this.group.start();
    this.startedAt = Date.now();
    this.onUpdate({ kind: 'started', pid });
  }

  private onStdout(text: string): void {
    if (!text.startsWith('{')) return; // plain output: already in the log ring
    const parsed = parseRoleEventLine(text);
    if (!parsed.ok) {
      this.logs.push('stderr', `[afd-agent] ${parsed.error}`);
      return;
    }
    const ev = parsed.event;
    if (this.stateValue === 'failed' || this.stateValue === 'exited') return;
    switch (ev.type) {
      case 'progress':
        this.progress.set(ev.phase, { bytesDone: ev.bytesDone, bytesTotal: ev.bytesTotal });
        if (this.stateValue !== 'ready' && this.stateValue !== 'stopping') this.stateValue = ev.phase;
        this.onUpdate({ kind: 'progress', phase: ev.phase, bytesDone: ev.bytesDone, bytesTotal: ev.bytesTotal, ...(ev.message ? { message: ev.message } : {}) });
        break;
      case 'listening':
        this.apiUrlValue = ev.apiUrl;
        this.onUpdate({ kind: 'listening', apiUrl: ev.apiUrl });
        this.startPolling();
        break;
      case 'ready':
        // Readiness is confirmed by /health (startPolling); the event speeds the first check.
        if (this.apiUrlValue) void this.pollHealth();
        break;
      case 'failed':
        this.lastFailedMessage = ev.message;
        break;
      case 'stopped':
        break;
    }
  }

  private startPolling(): void {
    if (this.polling) return;
    this.polling = true;
    const tick = (): void => {
      if (!this.polling) return;
      const wasReady = this.stateValue === 'ready';
      void this.pollHealth().finally(() => {
        if (!this.polling) return;
        this.timers.push(setTimeout(tick, wasReady ? this.opts.healthPollMs : this.opts.readyPollMs));
      });
    };
    tick();
    const metrics = (): void => {
      if (!this.polling) return;
      const run = this.stateValue === 'ready' ? this.pollMetrics() : Promise.resolve();
      void run.finally(() => {
        if (this.polling) this.timers.push(setTimeout(metrics, this.opts.metricsPollMs));
      });
    };
    metrics();
  }

  private stopPolling(): void {
    this.polling = false;
    for (const t of this.timers) clearTimeout(t);
    this.timers = [];
  }

  private async pollHealth(): Promise<void> {
    const url = this.apiUrlValue;
    if (!url) return;
    const health = await readHealth(url);
    if (!this.polling || this.stateValue === 'stopping' || this.stateValue === 'failed' || this.stateValue === 'exited') return;
    if (health.ready && this.stateValue !== 'ready') {
      this.stateValue = 'ready';
      this.messageValue = null;
      this.onUpdate({ kind: 'ready' });
    } else if (this.stateValue === 'ready') {
      // Once ready, a 503 (e.g. an FFN peer lost) is reported as a health change, not a state change.
      const reason = health.ready ? null : health.reason;
      if (reason !== this.messageValue) {
        this.messageValue = reason;
        this.onUpdate({ kind: 'health', healthy: health.ready, reason });
      }
    }
  }

  private async pollMetrics(): Promise<void> {
    const url = this.apiUrlValue;
    if (!url) return;
    const body = await readJson(url, '/afd/stats', 1000);
    if (body === undefined || !this.polling) return;
    const snapshot = parseStatsBody(body, Date.now());
    if (snapshot) this.onUpdate({ kind: 'metrics', snapshot });
  }

  private onExit(exit: ChildExit): void {
    this.stopPolling();
    this.exitCode = exit.exitCode;
    // A requested or expected stop is clean whatever the code (SIGKILL after the grace period included).
    if (exit.requested || this.stopExpected) {
      this.stateValue = 'exited';
      this.onUpdate({ kind: 'exited', exitCode: exit.exitCode, signal: exit.signal });
      return;
    }
    this.stateValue = 'failed';
    const how = exit.signal ? `was killed by ${exit.signal}` : `exited with code ${exit.exitCode}`;
    const message = `${this.id.role} rank ${this.id.rank} ${how}${this.lastFailedMessage ? `: ${this.lastFailedMessage}` : ''}`;
    this.messageValue = message;
    this.onUpdate({ kind: 'failed', exitCode: exit.exitCode, signal: exit.signal, message, lastLines: this.logs.tail(this.opts.failureTailLines) });
    this.onUpdate({ kind: 'exited', exitCode: exit.exitCode, signal: exit.signal });
  }

  /** Sends a signal to the rank's process group (SIGKILL simulates a crash in tests). */
  kill(signal: NodeJS.Signals): void {
    this.group?.kill(signal);
  }

  /** Marks an exit from now on as expected (the topology is stopping), without signalling. */
  expectStop(): void {
    if (!this.group?.running) return;
    this.stopExpected = true;
    this.stateValue = 'stopping';
    this.stopPolling();
  }

  /** Graceful stop (SIGTERM, then SIGKILL after graceMs); resolves once it has exited. */
  async stop(graceMs = 10_000): Promise<void> {
    if (!this.group || !this.group.running) return;
    this.stateValue = 'stopping';
    this.stopPolling();
    await this.group.stop(graceMs);
    await this.exitPromise;
  }
}
