/**
 * Test helper: `afd-agent launch ...` as a user runs it, from the test bundle, with a
 * private AFD_HOME. Waits for its summary and reads the OpenAI endpoint and the rank pids
 * from it; `term()` is Ctrl-C; every launch still running is killed when the test process
 * exits. Without an explicit --afd-port it gets a random free block: launches of test
 * files running side by side would otherwise race for the default 29500.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { freePortBlock } from '@afd/native/ports';
import { agentScript, testAddonPath } from './agentBundle.js';

export interface StartedLaunch {
  child: ChildProcess;
  script: string;
  /** Front router base URL (no /v1). */
  api: string;
  /** Rank pids by "role rank" (e.g. "ffn 1"), from the summary. */
  pids: Map<string, number>;
  /** Rank HTTP base URLs by "role rank", from the summary. */
  urls: Map<string, string>;
  stdout(): string;
  stderr(): string;
  /** Resolves with the exit code. */
  exited: Promise<number | null>;
  /** SIGTERM (Ctrl-C) and the exit code. */
  term(): Promise<number | null>;
}

const live = new Set<ChildProcess>();
process.once('exit', () => {
  for (const c of live) c.kill('SIGKILL');
});

/** Starts a launch and waits (bounded) for its summary; rejects with its output if it exits first. */
export async function startLaunch(args: string[], o: { home: string; cwd?: string; env?: NodeJS.ProcessEnv; readyMs?: number }): Promise<StartedLaunch> {
  const script = await agentScript();
  const port = args.includes('--afd-port') ? [] : ['--afd-port', String(await freePortBlock(4))];
  const child = spawn(process.execPath, [script, 'launch', '--backend', 'cpu', '--threads', '1', '--api-port', '0', ...port, ...args], {
    env: { ...process.env, AFD_HOME: o.home, AFD_NATIVE_ADDON: testAddonPath(), ...o.env },
    cwd: o.cwd,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  live.add(child);
  let out = '';
  let err = '';
  child.stdout!.on('data', (c: Buffer) => (out += c.toString()));
  child.stderr!.on('data', (c: Buffer) => (err = (err + c.toString()).slice(-200_000)));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  void exited.then(() => live.delete(child));
  const t0 = Date.now();
  while (!/Ctrl-C stops every rank/.test(out)) {
    if (child.exitCode !== null) throw new Error(`launch exited early (${child.exitCode}): ${err.slice(-4000)}`);
    if (Date.now() - t0 > (o.readyMs ?? 240_000)) throw new Error(`no summary within ${o.readyMs ?? 240_000} ms: ${err.slice(-4000)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  const api = /OpenAI API: (http:\/\/[^\s]+)\/v1/.exec(out)?.[1];
  if (!api) throw new Error(`no OpenAI API line in the summary: ${out}`);
  const rows = [...out.matchAll(/^ {2}(\w+) (\d+): (\S+) {2}pid (\d+)$/gm)];
  const pids = new Map(rows.map((m) => [`${m[1]} ${m[2]}`, Number(m[4])]));
  const urls = new Map(rows.map((m) => [`${m[1]} ${m[2]}`, m[3]!]));
  return {
    child,
    script,
    api,
    pids,
    urls,
    stdout: () => out,
    stderr: () => err,
    exited,
    async term() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      return exited;
    },
  };
}
