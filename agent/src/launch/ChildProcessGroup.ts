/**
 * One supervised child process in its own process group. The agent never goes through a
 * shell: it spawns a file with an argument vector. Output is split into lines; stdout
 * lines go to `onStdoutLine` (role events are JSON lines there) and every line, stdout
 * and stderr, lands in a bounded LogRing. Stopping sends SIGTERM to the whole group,
 * then SIGKILL after a grace period, so grandchildren cannot outlive their rank.
 *
 * The child's stdin stays an open pipe: when the agent dies (even by SIGKILL) the pipe
 * closes, and a supervised role process (AFD_SUPERVISED=1) exits on EOF (parentWatch.ts).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { LogRing, type RingLine } from './LogRing.js';
import { stopGracefully } from '../util/stopGracefully.js';

export interface ChildSpec {
  /** Executable (the Node binary for role processes). */
  file: string;
  /** Argument vector; never joined into a shell string. */
  args: string[];
  /** Environment of the child (complete: nothing else is inherited). */
  env: NodeJS.ProcessEnv;
  cwd?: string;
}

export interface ChildExit {
  /** Exit code, or null when a signal ended the process. */
  exitCode: number | null;
  /** The signal that ended it, or null. */
  signal: NodeJS.Signals | null;
  /** True when the exit followed a stop() request. */
  requested: boolean;
}

export interface ChildHandlers {
  onStdoutLine?: (text: string) => void;
  onLog?: (line: RingLine) => void;
  onExit?: (exit: ChildExit) => void;
}

/** Every live group this agent started, so an exiting agent can kill them synchronously. */
const liveGroups = new Set<number>();
let exitHookInstalled = false;

function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  // 'exit' handlers must be synchronous: SIGKILL whatever is left (graceful stop came before).
  process.on('exit', () => killAllGroupsNow());
}

/** SIGKILLs every process group still alive (last resort on agent exit). */
export function killAllGroupsNow(): void {
  for (const pgid of liveGroups) {
    try {
      process.kill(-pgid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  liveGroups.clear();
}

/** Number of child groups this process still supervises (tests use it). */
export function liveGroupCount(): number {
  return liveGroups.size;
}

export class ChildProcessGroup {
  readonly logs: LogRing;
  private child: ChildProcess | undefined;
  private exitInfo: ChildExit | undefined;
  private stopRequested = false;
  private readonly exited: Promise<ChildExit>;
  private resolveExit!: (e: ChildExit) => void;

  constructor(
    readonly spec: ChildSpec,
    private readonly handlers: ChildHandlers = {},
    logs?: LogRing,
  ) {
    this.logs = logs ?? new LogRing();
    this.exited = new Promise((resolve) => (this.resolveExit = resolve));
  }

  /** Starts the process; throws when it cannot be spawned (e.g. missing executable). */
  start(): number {
    if (this.child) throw new Error('process already started');
    installExitHook();
    const child = spawn(this.spec.file, this.spec.args, {
      env: this.spec.env,
      cwd: this.spec.cwd,
      detached: true, // own process group: stop() signals the whole group
      stdio: ['pipe', 'pipe', 'pipe'],
      shell: false,
    });
    this.child = child;
    child.stdin?.on('error', () => undefined); // EPIPE when the child exits first
    child.on('error', (err) => {
      this.log('stderr', `[afd-agent] spawn of ${this.spec.file} failed: ${err.message}`);
      this.finish({ exitCode: null, signal: null, requested: this.stopRequested }, 127);
    });
    if (child.pid !== undefined) liveGroups.add(child.pid);
    const out = createInterface({ input: child.stdout! });
    out.on('line', (text) => {
      this.log('stdout', text);
      this.handlers.onStdoutLine?.(text);
    });
    createInterface({ input: child.stderr! }).on('line', (text) => this.log('stderr', text));
    // 'close' fires after stdio ends, so every line has been read before onExit.
    child.on('close', (code, signal) => this.finish({ exitCode: code, signal, requested: this.stopRequested }));
    return child.pid ?? -1;
  }

  private log(stream: RingLine['stream'], text: string): void {
    const line = this.logs.push(stream, text);
    this.handlers.onLog?.(line);
  }

  private finish(exit: ChildExit, spawnFailureCode?: number): void {
    if (this.exitInfo) return;
    const info = spawnFailureCode !== undefined ? { ...exit, exitCode: spawnFailureCode } : exit;
    this.exitInfo = info;
    if (this.child?.pid !== undefined) {
      // The leader is gone; reap any stragglers of its group.
      this.signalGroup('SIGKILL');
      liveGroups.delete(this.child.pid);
    }
    this.handlers.onExit?.(info);
    this.resolveExit(info);
  }

  get pid(): number | undefined {
    return this.child?.pid;
  }

  get running(): boolean {
    return this.child !== undefined && this.exitInfo === undefined;
  }

  /** Resolves when the process has exited and its output is drained. */
  waitExit(): Promise<ChildExit> {
    return this.exited;
  }

  private signalGroup(signal: NodeJS.Signals): void {
    const pid = this.child?.pid;
    if (pid === undefined) return;
    try {
      process.kill(-pid, signal);
    } catch {
      // the group is gone
    }
  }

  /** Sends a signal to the process group (tests use SIGKILL to simulate a crash). */
  kill(signal: NodeJS.Signals = 'SIGTERM'): void {
    this.signalGroup(signal);
  }

  /** SIGTERM the group, SIGKILL after graceMs; resolves with the exit. */
  async stop(graceMs = 10_000): Promise<ChildExit> {
    if (!this.child) return { exitCode: null, signal: null, requested: true };
    if (this.exitInfo) return this.exitInfo;
    this.stopRequested = true;
    return stopGracefully((sig) => this.signalGroup(sig), this.exited, graceMs);
  }
}
