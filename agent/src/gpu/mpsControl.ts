/**
 * The CUDA MPS control program (`nvidia-cuda-mps-control`) as the agent uses it: found on
 * PATH or in /usr/local/nvidia/bin (where GPU containers mount the driver's tools), `-d`
 * to start a control daemon, and one command on its stdin (`get_server_list`, `quit`) to
 * talk to the daemon that serves a pipe directory. Every run has a deadline: a control
 * program that hangs is killed and reported, never waited on forever.
 */
import { spawn } from 'node:child_process';
import { accessSync, constants, readFileSync } from 'node:fs';
import { delimiter, join } from 'node:path';

/** The control program's file name. */
export const MPS_CONTROL = 'nvidia-cuda-mps-control';
/** Where GPU container images mount the driver's utilities, searched after PATH. */
export const NVIDIA_BIN_DIR = '/usr/local/nvidia/bin';
/** MPS's own default pipe directory (clients without CUDA_MPS_PIPE_DIRECTORY look there). */
export const DEFAULT_MPS_PIPE_DIR = '/tmp/nvidia-mps';

/** Where a control daemon listens and logs (CUDA_MPS_PIPE_DIRECTORY, CUDA_MPS_LOG_DIRECTORY). */
export interface MpsDirs {
  pipeDirectory: string;
  logDirectory: string;
}

/** What one run of the control program did. */
export interface ControlRun {
  /** Exit code; null when it was killed (timed out) or could not start. */
  code: number | null;
  stdout: string;
  stderr: string;
  /** True when it ran past its deadline and was killed. */
  timedOut: boolean;
  /** Why it could not be started at all (e.g. EACCES); undefined when it ran. */
  spawnError?: string;
}

function isExecutable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** The control program on PATH, else in /usr/local/nvidia/bin; null when neither has it. */
export function findMpsControl(env: NodeJS.ProcessEnv = process.env, extraDirs: readonly string[] = [NVIDIA_BIN_DIR]): string | null {
  const dirs = [...(env['PATH'] ?? '').split(delimiter).filter(Boolean), ...extraDirs];
  for (const dir of dirs) {
    const candidate = join(dir, MPS_CONTROL);
    if (isExecutable(candidate)) return candidate;
  }
  return null;
}

/** The environment a control program (and so its daemon) runs with for `dirs`. */
export function controlEnv(base: NodeJS.ProcessEnv, dirs: Partial<MpsDirs>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...base };
  if (dirs.pipeDirectory) env['CUDA_MPS_PIPE_DIRECTORY'] = dirs.pipeDirectory;
  if (dirs.logDirectory) env['CUDA_MPS_LOG_DIRECTORY'] = dirs.logDirectory;
  return env;
}

/** Runs the control program with `args`, writing `input` to its stdin; kills it after `timeoutMs`. */
export function runControl(program: string, args: readonly string[], env: NodeJS.ProcessEnv, input: string, timeoutMs: number): Promise<ControlRun> {
  return new Promise((resolve) => {
    let stdout = '';
    let stderr = '';
    let timedOut = false;
    // `-d` forks the daemon, which keeps no handle on our pipes (it would hold them open otherwise).
    const child = spawn(program, [...args], { env, stdio: ['pipe', 'pipe', 'pipe'] });
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill('SIGKILL');
    }, timeoutMs);
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.stdin.on('error', () => undefined); // a program that exits without reading its stdin
    child.stdin.end(input);
    child.once('error', (err) => {
      clearTimeout(timer);
      resolve({ code: null, stdout, stderr, timedOut, spawnError: err.message });
    });
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code: timedOut ? null : code, stdout, stderr, timedOut });
    });
  });
}

/** Sends one command to the daemon of `pipeDirectory` (the control program as a client). */
export function sendMpsCommand(program: string, pipeDirectory: string, base: NodeJS.ProcessEnv, command: string, timeoutMs: number): Promise<ControlRun> {
  return runControl(program, [], controlEnv(base, { pipeDirectory }), `${command}\n`, timeoutMs);
}

/** True when a control daemon answers on `pipeDirectory`. */
export async function mpsDaemonAnswers(program: string, pipeDirectory: string, base: NodeJS.ProcessEnv, timeoutMs: number): Promise<boolean> {
  const run = await sendMpsCommand(program, pipeDirectory, base, 'get_server_list', timeoutMs);
  return run.code === 0;
}

/** The last `n` non-empty lines of one of MPS's logs (control.log: the daemon; server.log: its servers); [] when there is none. */
export function mpsLogTail(logDirectory: string, n = 3, file: 'control.log' | 'server.log' = 'control.log'): string[] {
  try {
    return readFileSync(join(logDirectory, file), 'utf8').split('\n').map((l) => l.trim()).filter(Boolean).slice(-n);
  } catch {
    return [];
  }
}

/** The last lines of the daemon's control.log. */
export function controlLogTail(logDirectory: string, n = 3): string[] {
  return mpsLogTail(logDirectory, n, 'control.log');
}

/** One line about a run that failed: its exit, stderr and stdout, or that it hung or could not start. */
export function describeRun(run: ControlRun, timeoutMs: number): string {
  if (run.spawnError) return `could not be run (${run.spawnError})`;
  if (run.timedOut) return `did not finish within ${(timeoutMs / 1000).toFixed(0)} s and was killed`;
  const said = [run.stderr.trim(), run.stdout.trim()].filter(Boolean).join(' | ');
  return `exited with code ${run.code}${said ? `: ${said}` : ''}`;
}
