/**
 * Real processes for the e2e suite: `afd-agent serve` and the console's browser-mode
 * host. Each is started with a bounded wait for its ready line and killed (with its
 * process group) when the test is done, also on failure.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { AFD_HOME, AGENT_SCRIPT, ROOT, START_SCRIPT } from './paths.js';

export interface Started {
  child: ChildProcess;
  /** Output so far (stdout + stderr), for failure messages. */
  output: string[];
  stop(): Promise<void>;
}

function startProcess(args: string[], env: NodeJS.ProcessEnv, ready: (line: string) => boolean, what: string, timeoutMs = 60_000): Promise<Started & { readyLine: string }> {
  const child = spawn(process.execPath, args, { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['pipe', 'pipe', 'pipe'], detached: true });
  const output: string[] = [];
  const stop = async (): Promise<void> => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((r) => child.once('exit', () => r()));
    try {
      process.kill(-child.pid!, 'SIGTERM');
    } catch {
      return;
    }
    const t = setTimeout(() => {
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {
        // already gone
      }
    }, 15_000);
    await exited;
    clearTimeout(t);
  };
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      void stop();
      reject(new Error(`${what} did not become ready within ${timeoutMs} ms:\n${output.slice(-30).join('\n')}`));
    }, timeoutMs);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`${what} exited with ${code} before it was ready:\n${output.slice(-30).join('\n')}`));
    });
    createInterface({ input: child.stderr! }).on('line', (l) => {
      output.push(l);
      if (output.length > 500) output.shift();
    });
    createInterface({ input: child.stdout! }).on('line', (l) => {
      output.push(l);
      if (output.length > 500) output.shift();
      if (ready(l)) {
        clearTimeout(timer);
        resolve({ child, output, stop, readyLine: l });
      }
    });
  });
}

/** Native addon override for local runs (CI builds native/build). */
function addonEnv(): NodeJS.ProcessEnv {
  return process.env['AFD_NATIVE_ADDON'] ? { AFD_NATIVE_ADDON: process.env['AFD_NATIVE_ADDON'] } : {};
}

/**
 * Which built-in model the processes serve: the specs of console features are written for
 * the random tiny model (4 layers, 8 experts, a 151k vocabulary, no end-of-text, long
 * replies); the demo model's own specs (start, demoModel) ask for `demo`, the default of
 * a checkout that carries models/afd-demo-moe.
 */
export type BuiltInModel = 'tiny' | 'demo';

function modelEnv(model: BuiltInModel): NodeJS.ProcessEnv {
  return model === 'tiny' ? { AFD_DEMO_MODEL_DIR: 'none' } : {};
}

export interface StartedAgent extends Started {
  url: string;
  token: string;
}

/** `afd-agent serve` on an ephemeral loopback port with its own token file. */
export async function startAgent(model: BuiltInModel = 'tiny'): Promise<StartedAgent> {
  const dir = mkdtempSync(join(tmpdir(), 'afd-e2e-agent-'));
  const tokenFile = join(dir, 'agent-token');
  const s = await startProcess([AGENT_SCRIPT, 'serve', '--host', '127.0.0.1', '--port', '0', '--token-file', tokenFile], { AFD_HOME, ...addonEnv(), ...modelEnv(model) }, (l) => l.includes('"listening"'), 'afd-agent serve');
  const msg = JSON.parse(s.readyLine) as { url: string };
  return { ...s, url: msg.url, token: readFileSync(tokenFile, 'utf8').trim() };
}

export interface StartedConsole extends Started {
  /** Page URL with the token fragment. */
  url: string;
}

/** The console's browser-mode host (no local agent unless asked). */
export async function startConsole(extraArgs: string[] = ['--no-agent'], model: BuiltInModel = 'tiny'): Promise<StartedConsole> {
  const s = await startProcess([START_SCRIPT, '--web', '--no-open', '--port', '0', ...extraArgs], { AFD_HOME, ...addonEnv(), ...modelEnv(model) }, (l) => l.includes('console (browser mode): '), 'console web host');
  const url = s.readyLine.slice(s.readyLine.indexOf('http'));
  return { ...s, url };
}

/** Pids of the rank (role) processes an agent has running now: its children started as `afd-agent role ...`. */
export function rankPids(agent: Started): number[] {
  const parent = agent.child.pid;
  const out: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      // Field 4 is the parent pid; the command name (field 2) may hold spaces, so split after its ')'.
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid !== parent) continue;
      const cmd = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0');
      if (cmd.includes('role')) out.push(Number(entry));
    } catch {
      // the process ended while we looked
    }
  }
  return out;
}
