/**
 * Test helper: one real `afd-agent role ...` process (from the test bundle), its stdout
 * role events, stderr lines, HTTP helpers, and a registry that kills every process a test
 * started (afterAll, and on test-process exit) so no rank outlives its test.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { parseRoleEventLine, type RoleEvent } from '@afd/shared';
import { agentScript, testAddonPath } from '../testing/agentBundle.js';

export interface RoleProcessOptions {
  role: 'colocated' | 'attention' | 'ffn';
  rank?: number;
  topology?: string;
  afdPort?: number;
  model: string;
  /** AFD config (JSON) passed with --config. */
  config?: Record<string, unknown>;
  /** Extra CLI arguments. */
  args?: string[];
  /** AFD_HOME of the process. */
  home: string;
}

const live = new Set<ChildProcess>();
process.once('exit', () => {
  for (const c of live) c.kill('SIGKILL');
});

export class RoleProcess {
  readonly events: RoleEvent[] = [];
  readonly stderr: string[] = [];
  /** Resolves when the process exits. */
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
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
      else this.stderr.push(`stdout (not an event): ${line}`);
      this.notify();
    });
    createInterface({ input: child.stderr! }).on('line', (line) => this.stderr.push(line));
  }

  static async start(o: RoleProcessOptions): Promise<RoleProcess> {
    const script = await agentScript();
    const args = [script, 'role', o.role, '--model', o.model, '--backend', 'cpu', '--threads', '1', '--api-port', '0'];
    args.push('--max-num-seqs', '8', '--kv-cache-mib', '16', '--served-model-name', 'm');
    if (o.role !== 'colocated') args.push('--topology', o.topology ?? '1A1F', '--rank', String(o.rank ?? 0), '--afd-port', String(o.afdPort ?? 29500));
    if (o.config) args.push('--config', JSON.stringify(o.config));
    args.push(...(o.args ?? []));
    const child = spawn(process.execPath, args, {
      env: { ...process.env, AFD_HOME: o.home, AFD_NATIVE_ADDON: testAddonPath(), AFD_LOG_LEVEL: 'info' },
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

  /** The HTTP base URL once the rank is ready. */
  async ready(ms = 90_000): Promise<string> {
    const failed = this.events.find((e) => e.type === 'failed');
    if (failed) throw new Error(`${this.name} failed: ${failed.message}`);
    await this.waitFor((e): e is Extract<RoleEvent, { type: 'ready' | 'failed' }> => e.type === 'ready' || e.type === 'failed', 'ready', ms).then((e) => {
      if (e.type === 'failed') throw new Error(`${this.name} failed: ${e.message}`);
    });
    return this.apiUrl();
  }

  apiUrl(): string {
    const ev = this.events.find((e): e is Extract<RoleEvent, { type: 'listening' }> => e.type === 'listening');
    if (!ev) throw new Error(`${this.name} has not reported its HTTP address`);
    return ev.apiUrl;
  }

  describe(): string {
    return `events ${JSON.stringify(this.events.slice(-4))}; stderr: ${this.stderr.slice(-6).join('\n')}`;
  }

  /** SIGTERM (graceful stop) and wait. */
  async stop(): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
    if (this.alive) this.child.kill('SIGTERM');
    return this.exited;
  }

  /** SIGKILL (a crash) and wait. */
  async kill(): Promise<void> {
    if (this.alive) this.child.kill('SIGKILL');
    await this.exited;
  }
}

/** Kills every role process still running (afterAll of every AFD integration test). */
export async function killAllRoles(): Promise<void> {
  const children = [...live];
  for (const c of children) c.kill('SIGKILL');
  await Promise.all(children.map((c) => new Promise<void>((resolve) => (c.exitCode !== null || c.signalCode !== null ? resolve() : c.once('exit', () => resolve())))));
}

/** Greedy completion of `promptIds` (token ids) on a rank; returns the text and finish reason. */
export async function complete(apiUrl: string, promptIds: number[], maxTokens: number): Promise<{ text: string; finish: string }> {
  const res = await fetch(`${apiUrl}/v1/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'm', prompt: promptIds, max_tokens: maxTokens, temperature: 0, ignore_eos: true }),
  });
  const body = (await res.json()) as { choices?: { text: string; finish_reason: string }[]; error?: { message: string } };
  if (!res.ok || !body.choices) throw new Error(`completion failed (${res.status}): ${JSON.stringify(body)}`);
  return { text: body.choices[0]!.text, finish: body.choices[0]!.finish_reason };
}

/** Greedy completions of every prompt on a colocated rank of `model` (the reference of the AFD tests); the rank is stopped after. */
export async function colocatedCompletions(model: string, home: string, prompts: number[][], maxTokens: number): Promise<string[]> {
  const colocated = await RoleProcess.start({ role: 'colocated', model, home });
  try {
    const url = await colocated.ready();
    const out: string[] = [];
    for (const p of prompts) out.push((await complete(url, p, maxTokens)).text);
    return out;
  } finally {
    await colocated.stop();
  }
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

/** GET /health -> status code and body. */
export async function health(apiUrl: string): Promise<{ status: number; body: { status?: string; reason?: string } }> {
  const res = await fetch(`${apiUrl}/health`);
  return { status: res.status, body: (await res.json()) as { status?: string; reason?: string } };
}

/** Polls `cond` every 100 ms until it holds; throws naming `what` after `ms`. */
export async function until(cond: () => Promise<boolean> | boolean, what: string, ms = 20_000): Promise<void> {
  const t0 = Date.now();
  while (!(await cond())) {
    if (Date.now() - t0 > ms) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
