/**
 * Test helper: a real `afd-agent serve` process on loopback with a private AFD_HOME and
 * token file, started from the test bundle. `stop()` sends SIGTERM and waits; `kill()`
 * is the failure path. Every started agent is also killed when the test process exits.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import type { AgentEvent } from '@afd/shared';
import { AgentClient } from '../daemon/AgentClient.js';
import { agentScript, testAddonPath } from './agentBundle.js';

export interface StartedAgent {
  url: string;
  token: string;
  tokenFile: string;
  home: string;
  script: string;
  child: ChildProcess;
  stderr: string[];
  /** SIGTERM and wait for exit; resolves with the exit code. */
  stop(): Promise<number | null>;
}

const started = new Set<ChildProcess>();
process.once('exit', () => {
  for (const c of started) c.kill('SIGKILL');
});

/** Starts an agent with extra serve arguments; rejects with its stderr if it fails to listen. */
export async function startAgent(extraArgs: string[] = [], env: NodeJS.ProcessEnv = {}): Promise<StartedAgent> {
  const script = await agentScript();
  const home = mkdtempSync(join(tmpdir(), 'afd-agent-home-'));
  const tokenFile = join(home, 'agent-token');
  const child = spawn(process.execPath, [script, 'serve', '--port', '0', '--token-file', tokenFile, ...extraArgs], {
    env: { ...process.env, AFD_HOME: home, AFD_NATIVE_ADDON: testAddonPath(), AFD_AGENT_SCRIPT: script, AFD_LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  started.add(child);
  const stderr: string[] = [];
  createInterface({ input: child.stderr! }).on('line', (l) => stderr.push(l));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  exited.then(() => started.delete(child)).catch(() => undefined);
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`agent did not start within 20 s: ${stderr.join('\n')}`)), 20_000);
    createInterface({ input: child.stdout! }).on('line', (line) => {
      try {
        const msg = JSON.parse(line) as { type?: string; url?: string };
        if (msg.type === 'listening' && msg.url) {
          clearTimeout(timer);
          resolve(msg.url);
        }
      } catch {
        // not our line
      }
    });
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`agent exited with ${code} before listening: ${stderr.join('\n')}`));
    });
  });
  const token = readFileSync(tokenFile, 'utf8').trim();
  return {
    url,
    token,
    tokenFile,
    home,
    script,
    child,
    stderr,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      const code = await exited;
      rmSync(home, { recursive: true, force: true });
      return code;
    },
  };
}

/** Runs `afd-agent serve ...` expecting it to fail; resolves with exit code and stderr. */
export async function runAgentExpectingFailure(args: string[], env: NodeJS.ProcessEnv = {}): Promise<{ code: number | null; stderr: string }> {
  const script = await agentScript();
  const home = mkdtempSync(join(tmpdir(), 'afd-agent-home-'));
  try {
    const child = spawn(process.execPath, [script, ...args], { env: { ...process.env, AFD_HOME: home, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    started.add(child);
    let stderr = '';
    child.stderr!.on('data', (c: Buffer) => (stderr += c.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
    const code = await new Promise<number | null>((resolve) => child.once('exit', (c) => resolve(c)));
    clearTimeout(timer);
    started.delete(child);
    return { code, stderr };
  } finally {
    rmSync(home, { recursive: true, force: true });
  }
}

/** True while a process with this pid exists. */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Pids of processes whose command line mentions `needle` (Linux /proc scan). */
export function pidsMentioning(needle: string): number[] {
  const out: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    try {
      const cmd = readFileSync(`/proc/${entry}/cmdline`, 'utf8');
      if (cmd.includes(needle)) out.push(Number(entry));
    } catch {
      // exited meanwhile
    }
  }
  return out;
}

/** A client of `agent` that appends every event it receives to `events` and each started rank's pid to `pids`. */
export async function connectRecording(agent: StartedAgent, events: AgentEvent[], pids: Set<number>): Promise<AgentClient> {
  const client = await AgentClient.connect(agent.url, agent.token);
  client.onEvent((e) => {
    events.push(e);
    if (e.type === 'rank.started') pids.add(e.pid);
  });
  return client;
}
