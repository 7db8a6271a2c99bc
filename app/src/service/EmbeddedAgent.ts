/**
 * The local agent `npm start` runs beside the console: `afd-agent serve` on loopback with
 * an ephemeral port, started as a child (never through a shell). Its stdout announces
 * the URL; the token is read from the token file it names. Stopping it stops its ranks.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { createInterface } from 'node:readline';

export interface EmbeddedAgentOptions {
  /** Path of afd-agent.cjs. */
  script: string;
  /** Token file (default: the agent's default, $AFD_HOME/agent-token). */
  tokenFile?: string;
  /** Extra environment (e.g. AFD_HOME for tests). */
  env?: NodeJS.ProcessEnv;
  /** Each stderr line of the agent (pino JSON). */
  onLog?: (line: string) => void;
  /** How long to wait for the agent to listen, ms. */
  startTimeoutMs?: number;
}

export interface EmbeddedAgent {
  url: string;
  token: string;
  tokenFile: string;
  pid: number;
  /** SIGTERM (the agent stops its ranks), SIGKILL after graceMs. */
  stop(graceMs?: number): Promise<void>;
  /** Resolves when the agent process exits. */
  exited: Promise<number | null>;
}

/** Where afd-agent.cjs may be, from a bundle in app/dist (or app/dist/main) or a packaged app. */
export function findAgentScript(fromDir: string, env: NodeJS.ProcessEnv = process.env): string {
  const explicit = env['AFD_AGENT_SCRIPT'];
  if (explicit) {
    if (!existsSync(explicit)) throw new Error(`AFD_AGENT_SCRIPT points to ${explicit}, which does not exist`);
    return explicit;
  }
  const resources = (process as NodeJS.Process & { resourcesPath?: string }).resourcesPath;
  const candidates = [
    resolve(fromDir, '../../agent/dist/afd-agent.cjs'),
    resolve(fromDir, '../../../agent/dist/afd-agent.cjs'),
    ...(resources ? [join(resources, 'agent', 'afd-agent.cjs')] : []),
  ];
  const found = candidates.find((c) => existsSync(c));
  if (!found) {
    throw new Error(`cannot find the agent bundle (looked in ${candidates.join(', ')}): run \`npm run build\` first, or set AFD_AGENT_SCRIPT`);
  }
  return found;
}

export function startEmbeddedAgent(opts: EmbeddedAgentOptions): Promise<EmbeddedAgent> {
  const args = [opts.script, 'serve', '--host', '127.0.0.1', '--port', '0', ...(opts.tokenFile ? ['--token-file', opts.tokenFile] : [])];
  const env: NodeJS.ProcessEnv = { ...process.env, ...opts.env, AFD_SUPERVISED: '1' };
  // Inside Electron, execPath is the Electron binary: make it behave as plain Node.
  if (process.versions['electron']) env['ELECTRON_RUN_AS_NODE'] = '1';
  // Its own process group: a Ctrl-C in the terminal reaches the console only, which stops the
  // topology through the agent and then the agent (no agent vanishing under a stop request).
  // AFD_SUPERVISED makes it stop and exit should the console die without doing so.
  const child: ChildProcess = spawn(process.execPath, args, { stdio: ['pipe', 'pipe', 'pipe'], env, cwd: dirname(opts.script), detached: true });
  const stderrTail: string[] = [];
  createInterface({ input: child.stderr! }).on('line', (line) => {
    stderrTail.push(line);
    if (stderrTail.length > 20) stderrTail.shift();
    opts.onLog?.(line);
  });
  const exited = new Promise<number | null>((res) => child.once('exit', (code) => res(code)));

  return new Promise<EmbeddedAgent>((resolvePromise, reject) => {
    let settled = false;
    const fail = (why: string): void => {
      if (settled) return;
      settled = true;
      child.kill('SIGKILL');
      const tail = stderrTail.length ? `\nlast agent output:\n${stderrTail.join('\n')}` : '';
      reject(new Error(`the local agent did not start: ${why}${tail}`));
    };
    const timer = setTimeout(() => fail(`no "listening" line within ${opts.startTimeoutMs ?? 30_000} ms`), opts.startTimeoutMs ?? 30_000);
    child.once('error', (e) => fail(e.message));
    child.once('exit', (code, signal) => fail(`it exited (${code !== null ? `code ${code}` : `signal ${signal}`})`));
    createInterface({ input: child.stdout! }).on('line', (line) => {
      if (settled) return;
      let msg: { type?: unknown; url?: unknown; tokenFile?: unknown };
      try {
        msg = JSON.parse(line) as typeof msg;
      } catch {
        return;
      }
      if (msg.type !== 'listening' || typeof msg.url !== 'string' || typeof msg.tokenFile !== 'string') return;
      clearTimeout(timer);
      let token: string;
      try {
        token = readFileSync(msg.tokenFile, 'utf8').trim();
      } catch (e) {
        fail(`cannot read its token file ${msg.tokenFile}: ${(e as Error).message}`);
        return;
      }
      settled = true;
      const stop = async (graceMs = 15_000): Promise<void> => {
        if (child.exitCode !== null || child.signalCode !== null) return;
        child.kill('SIGTERM');
        const t = setTimeout(() => child.kill('SIGKILL'), graceMs);
        await exited;
        clearTimeout(t);
      };
      resolvePromise({ url: msg.url, token, tokenFile: msg.tokenFile, pid: child.pid ?? -1, stop, exited });
    });
  });
}
