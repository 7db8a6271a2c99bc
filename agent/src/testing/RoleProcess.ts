/**
 * Test helper: one real `afd-agent role ...` process (from the test bundle) on the CPU
 * backend, its stdout role events, stderr lines, and a registry that kills every process
 * a test started (killAllRoles in afterAll, and on test-process exit) so no rank outlives
 * its test. HTTP calls to a started rank are in rankHttp.ts.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { parseRoleEventLine, resolveTopology, type RoleEvent } from '@afd/shared';
import { agentScript, testAddonPath } from './agentBundle.js';
import { stopGracefully } from '../util/stopGracefully.js';

export interface RoleProcessOptions {
  role: 'colocated' | 'attention' | 'ffn';
  rank?: number;
  /** Topology of an attention or FFN rank (default 1A1F). */
  topology?: string;
  /** First AFD port of an attention or FFN rank (default 29500). */
  afdPort?: number;
  /** HF checkpoint directory; omitted: the built-in default model (made in `home` on first use). */
  model?: string;
  /** AFD config (JSON) passed with --config. */
  config?: Record<string, unknown>;
  /** CPU threads (default 1). */
  threads?: number;
  /** --max-num-seqs (default 8: small test ranks). */
  maxNumSeqs?: number;
  /** --kv-cache-mib (default 16). */
  kvCacheMib?: number;
  /** --served-model-name (default "m", what rankHttp's complete asks for). */
  servedModelName?: string;
  /** Extra CLI arguments, after the ones above (for a repeated option the last one counts). */
  args?: string[];
  /** AFD_HOME of the process. */
  home: string;
  /** Extra environment. */
  env?: NodeJS.ProcessEnv;
}

/** How a process ended. */
export interface RoleExit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

type EventOf<K extends RoleEvent['type']> = Extract<RoleEvent, { type: K }>;

const live = new Set<ChildProcess>();
process.once('exit', () => {
  for (const c of live) c.kill('SIGKILL');
});

export class RoleProcess {
  readonly events: RoleEvent[] = [];
  readonly stderr: string[] = [];
  /** Lines on stdout that are not role events (the protocol allows none). */
  readonly strayStdout: string[] = [];
  /** Resolves when the process exits. */
  readonly exited: Promise<RoleExit>;
  private waiters: (() => void)[] = [];

  private constructor(
    readonly name: string,
    readonly child: ChildProcess,
  ) {
    live.add(child);
    this.exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
    void this.exited.then(() => {
      live.delete(child);
      this.notify();
    });
    createInterface({ input: child.stdout! }).on('line', (line) => {
      const parsed = parseRoleEventLine(line);
      if (parsed.ok) this.events.push(parsed.event);
      else this.strayStdout.push(line);
      this.notify();
    });
    createInterface({ input: child.stderr! }).on('line', (line) => this.stderr.push(line));
  }

  static async start(o: RoleProcessOptions): Promise<RoleProcess> {
    const script = await agentScript();
    const args = [script, 'role', o.role, ...(o.model ? ['--model', o.model] : []), '--backend', 'cpu', '--threads', String(o.threads ?? 1), '--api-port', '0'];
    args.push('--max-num-seqs', String(o.maxNumSeqs ?? 8), '--kv-cache-mib', String(o.kvCacheMib ?? 16), '--served-model-name', o.servedModelName ?? 'm');
    if (o.role !== 'colocated') args.push('--topology', o.topology ?? '1A1F', '--rank', String(o.rank ?? 0), '--afd-port', String(o.afdPort ?? 29500));
    if (o.config) args.push('--config', JSON.stringify(o.config));
    args.push(...(o.args ?? []));
    const child = spawn(process.execPath, args, {
      env: { ...process.env, AFD_HOME: o.home, AFD_NATIVE_ADDON: testAddonPath(), AFD_LOG_LEVEL: 'info', ...o.env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    return new RoleProcess(o.role === 'colocated' ? 'colocated' : `${o.role} ${o.rank ?? 0}`, child);
  }

  private notify(): void {
    const w = this.waiters;
    this.waiters = [];
    for (const f of w) f();
  }

  get alive(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  /** Waits for the first event matching `pred`; rejects on exit or timeout with the last stderr lines. */
  async waitFor<T extends RoleEvent>(pred: (e: RoleEvent) => e is T, what: string, ms = 90_000): Promise<T> {
    const t0 = Date.now();
    for (;;) {
      const hit = this.events.find(pred);
      if (hit) return hit;
      if (!this.alive) throw new Error(`${this.name} exited before ${what}: ${this.describe()}`);
      if (Date.now() - t0 > ms) throw new Error(`${this.name}: timed out waiting for ${what}: ${this.describe()}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, 200);
        this.waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }

  /** The first event of `type`; rejects when the rank reports failed first, exits, or after `ms`. */
  async event<K extends RoleEvent['type']>(type: K, ms = 90_000): Promise<EventOf<K>> {
    const e = await this.waitFor((x): x is EventOf<K> | EventOf<'failed'> => x.type === type || x.type === 'failed', `a "${type}" event`, ms);
    if (e.type === 'failed' && type !== 'failed') throw new Error(`${this.name} failed before "${type}": ${(e as EventOf<'failed'>).message}`);
    return e as EventOf<K>;
  }

  /** The HTTP base URL once the rank is ready. */
  async ready(ms = 90_000): Promise<string> {
    await this.event('ready', ms);
    return this.apiUrl();
  }

  apiUrl(): string {
    const ev = this.events.find((e): e is EventOf<'listening'> => e.type === 'listening');
    if (!ev) throw new Error(`${this.name} has not reported its HTTP address`);
    return ev.apiUrl;
  }

  describe(): string {
    const stray = this.strayStdout.length ? `; stdout that is not an event: ${this.strayStdout.slice(-3).join('\n')}` : '';
    return `events ${JSON.stringify(this.events.slice(-4))}; stderr: ${this.stderr.slice(-6).join('\n')}${stray}`;
  }

  /** SIGTERM (graceful stop) and wait; SIGKILL when it has not exited after `graceMs`. */
  async stop(graceMs = 30_000): Promise<RoleExit> {
    if (!this.alive) return this.exited;
    return stopGracefully((sig) => this.child.kill(sig), this.exited, graceMs);
  }

  /** SIGKILL (a crash) and wait. */
  async kill(): Promise<void> {
    if (this.alive) this.child.kill('SIGKILL');
    await this.exited;
  }
}

/** Kills every role process still running (afterAll of every test that starts them). */
export async function killAllRoles(): Promise<void> {
  const children = [...live];
  for (const c of children) c.kill('SIGKILL');
  await Promise.all(children.map((c) => new Promise<void>((resolve) => (c.exitCode !== null || c.signalCode !== null ? resolve() : c.once('exit', () => resolve())))));
}

/** The ranks of a started topology and their URLs, indexed by rank. */
export interface StartedTopology {
  attn: RoleProcess[];
  ffn: RoleProcess[];
  attnUrls: string[];
  ffnUrls: string[];
}

/** Starts every rank of `o.topology` with the same options (FFN ranks first, each role in rank order) and waits until all are ready. */
export async function startTopology(o: Omit<RoleProcessOptions, 'role' | 'rank'> & { topology: string }): Promise<StartedTopology> {
  const t = resolveTopology(o.topology);
  const ffn: RoleProcess[] = [];
  for (let f = 0; f < t.ffn.ranks; f++) ffn.push(await RoleProcess.start({ ...o, role: 'ffn', rank: f }));
  const attn: RoleProcess[] = [];
  for (let a = 0; a < t.attention.ranks; a++) attn.push(await RoleProcess.start({ ...o, role: 'attention', rank: a }));
  const attnUrls = await Promise.all(attn.map((p) => p.ready()));
  const ffnUrls = await Promise.all(ffn.map((p) => p.ready()));
  return { attn, ffn, attnUrls, ffnUrls };
}

/** Graceful stop of a topology: SIGTERM to the attention ranks (exit 0), whose shutdown flag ends every FFN rank (exit 0). */
export async function stopTopology(attention: RoleProcess[], ffn: RoleProcess[]): Promise<void> {
  const attnExits = await Promise.all(attention.map((p) => p.stop()));
  attnExits.forEach((e, a) => {
    if (e.code !== 0) throw new Error(`attention ${a} exited with ${e.code ?? e.signal}: ${attention[a]!.describe()}`);
  });
  const ffnExits = await Promise.all(ffn.map((p) => p.exited));
  ffnExits.forEach((e, f) => {
    if (e.code !== 0) throw new Error(`ffn ${f} exited with ${e.code ?? e.signal}: ${ffn[f]!.describe()}`);
  });
}
