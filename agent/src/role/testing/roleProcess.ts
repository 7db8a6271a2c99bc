/**
 * Integration-test helpers: bundle the CLI once into a temp dir, start real role processes,
 * read their RoleEvent lines, and always kill what was started.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { parseRoleEventLine, type RoleEvent } from '@afd/shared';
import { bundleEntry, testAddonPath } from '../../testing/agentBundle.js';

/** The native addon the processes load, or null when it is not built. */
export function addonPath(): string | null {
  const p = testAddonPath();
  return existsSync(p) ? p : null;
}

/** Bundles an entry (agent/src/cli/main.ts or agent/src/bench/main.ts) into a temp .cjs. */
export function bundle(entry: 'cli' | 'bench'): Promise<string> {
  return bundleEntry(entry);
}

export class RoleProcess {
  readonly events: RoleEvent[] = [];
  stderr = '';
  readonly exited: Promise<number | null>;
  private readonly child: ChildProcess;
  private waiters: (() => void)[] = [];

  constructor(script: string, args: string[], env: NodeJS.ProcessEnv) {
    this.child = spawn(process.execPath, [script, ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let buf = '';
    this.child.stdout!.on('data', (d: Buffer) => {
      buf += d.toString();
      let i: number;
      while ((i = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, i);
        buf = buf.slice(i + 1);
        const parsed = parseRoleEventLine(line);
        if (!parsed.ok) throw new Error(`role stdout is not the event protocol: ${parsed.error}`);
        this.events.push(parsed.event);
        for (const w of this.waiters.splice(0)) w();
      }
    });
    this.child.stderr!.on('data', (d: Buffer) => {
      this.stderr = (this.stderr + d.toString()).slice(-20000);
    });
    this.exited = new Promise((res) => this.child.on('exit', (code) => {
      res(code);
      for (const w of this.waiters.splice(0)) w();
    }));
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  /** Resolves with the first event of `type`; rejects on exit, a failed event, or timeout. */
  async waitFor(type: RoleEvent['type'], timeoutMs: number): Promise<RoleEvent> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const hit = this.events.find((e) => e.type === type);
      if (hit) return hit;
      const failed = this.events.find((e) => e.type === 'failed');
      if (failed && failed.type === 'failed') throw new Error(`role failed: ${failed.message}`);
      if (this.child.exitCode !== null) throw new Error(`role exited (${this.child.exitCode}) before "${type}": ${this.stderr.slice(-2000)}`);
      if (Date.now() > deadline) throw new Error(`no "${type}" event within ${timeoutMs} ms: ${this.stderr.slice(-2000)}`);
      await new Promise<void>((res) => {
        this.waiters.push(res);
        setTimeout(res, 200);
      });
    }
  }

  apiUrl(): string {
    const e = this.events.find((x) => x.type === 'listening');
    if (!e || e.type !== 'listening') throw new Error('role has not reported listening');
    return e.apiUrl;
  }

  /** SIGTERM and wait for exit; SIGKILL after `graceMs`. Resolves with the exit code. */
  async stop(graceMs = 10_000): Promise<number | null> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return this.child.exitCode;
    this.child.kill('SIGTERM');
    const timer = setTimeout(() => this.child.kill('SIGKILL'), graceMs);
    const code = await this.exited;
    clearTimeout(timer);
    return code;
  }
}
