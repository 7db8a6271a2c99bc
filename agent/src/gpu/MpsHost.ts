/**
 * CUDA MPS on this host, as the agent owns it. A launch that puts several ranks on one GPU
 * acquires a control daemon before its ranks start and releases it when it ends:
 *
 * - one that already answers on the pipe directory of someone else (the agent's own
 *   CUDA_MPS_PIPE_DIRECTORY, else MPS's default /tmp/nvidia-mps) is reused and never stopped;
 * - else the agents' own daemon, with its pipe and log folders under $AFD_HOME/mps, is
 *   joined when it answers, or started (`nvidia-cuda-mps-control -d`);
 * - every agent process that uses the agents' daemon has a file in $AFD_HOME/mps/users,
 *   and the last one to let go (no other live user) sends it `quit`.
 *
 * Acquire and release hold $AFD_HOME/mps/lock, so two agents on one home neither start two
 * daemons nor quit one the other has just joined. A daemon that does not answer after its
 * start is a clear error carrying the last lines of its control.log.
 */
import { existsSync } from 'node:fs';
import { mkdir, readdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { MpsStatus } from '@afd/shared';
import { withFileLock } from '../util/fileLock.js';
import { parseServerList } from './MpsServerWatch.js';
import { controlEnv, controlLogTail, DEFAULT_MPS_PIPE_DIR, describeRun, findMpsControl, MPS_CONTROL, mpsDaemonAnswers, mpsLogTail, NVIDIA_BIN_DIR, runControl, sendMpsCommand, type MpsDirs } from './mpsControl.js';

export interface MpsHostOptions {
  /** $AFD_HOME: the agents' daemon lives under <home>/mps. */
  home: string;
  /** The agent's environment: PATH to find the control program, a foreign CUDA_MPS_PIPE_DIRECTORY; the daemon inherits it. */
  env: NodeJS.ProcessEnv;
  /** Finds the control program (default: PATH, then /usr/local/nvidia/bin). */
  findProgram?: () => string | null;
  /** Deadline of one run of the control program, ms (default 10000). */
  commandTimeoutMs?: number;
  /** How long a started daemon gets to answer, ms (default 10000). */
  startTimeoutMs?: number;
}

/** The daemon a launch's ranks on shared GPUs use. */
export interface MpsLease {
  /** CUDA_MPS_PIPE_DIRECTORY of its clients. */
  pipeDirectory: string;
  /** True for the agents' own daemon ($AFD_HOME/mps), false for someone else's (reused, never stopped). */
  managedByAgent: boolean;
  /** True when this acquire started it. */
  started: boolean;
}

/** MPS was asked for and cannot be had: what, why and what to do, in the message. */
export class MpsError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'MpsError';
  }
}

/** True while a process with this pid exists (EPERM: it does, another user's). */
function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

const notFound = `${MPS_CONTROL} was not found on PATH or in ${NVIDIA_BIN_DIR} (it ships with the NVIDIA driver's utilities; in a container, mount them or install the driver's utilities package)`;

export class MpsHost {
  private readonly commandTimeoutMs: number;
  private readonly startTimeoutMs: number;
  /** Launches of this process that hold the daemon. */
  private leases = 0;
  private lease: MpsLease | undefined;

  constructor(private readonly opts: MpsHostOptions) {
    this.commandTimeoutMs = opts.commandTimeoutMs ?? 10_000;
    this.startTimeoutMs = opts.startTimeoutMs ?? 10_000;
  }

  /** The agents' own daemon's folders. */
  get dirs(): MpsDirs {
    return { pipeDirectory: join(this.opts.home, 'mps', 'pipe'), logDirectory: join(this.opts.home, 'mps', 'log') };
  }

  private get lockFile(): string {
    return join(this.opts.home, 'mps', 'lock');
  }

  private get usersDir(): string {
    return join(this.opts.home, 'mps', 'users');
  }

  /** The pipe directory of a daemon that is not the agents' (the agent's CUDA_MPS_PIPE_DIRECTORY, else MPS's default). */
  private get foreignPipeDirectory(): string {
    return this.opts.env['CUDA_MPS_PIPE_DIRECTORY'] || DEFAULT_MPS_PIPE_DIR;
  }

  program(): string | null {
    return (this.opts.findProgram ?? (() => findMpsControl(this.opts.env)))();
  }

  private answers(program: string, pipeDirectory: string): Promise<boolean> {
    return mpsDaemonAnswers(program, pipeDirectory, this.opts.env, this.commandTimeoutMs);
  }

  /** What `inventory.get` reports: the control program, the daemon that answers, or why MPS cannot be used. */
  async status(): Promise<MpsStatus> {
    const program = this.program();
    if (!program) return { controlProgram: null, daemon: null, unavailable: notFound };
    const foreign = this.foreignPipeDirectory;
    if (foreign !== this.dirs.pipeDirectory && (await this.answers(program, foreign))) {
      return { controlProgram: program, daemon: { pipeDirectory: foreign, managedByAgent: false }, unavailable: null };
    }
    const own = this.dirs.pipeDirectory;
    const daemon = existsSync(own) && (await this.answers(program, own)) ? { pipeDirectory: own, managedByAgent: true } : null;
    return { controlProgram: program, daemon, unavailable: null };
  }

  /** A control daemon that answers, for a launch's ranks on shared GPUs; throws MpsError when none can be had. */
  async acquire(): Promise<MpsLease> {
    if (this.lease) {
      this.leases++;
      return { ...this.lease, started: false };
    }
    const program = this.program();
    if (!program) throw new MpsError(notFound);
    const lease = await withFileLock(this.lockFile, async () => {
      const foreign = this.foreignPipeDirectory;
      if (foreign !== this.dirs.pipeDirectory && (await this.answers(program, foreign))) return { pipeDirectory: foreign, managedByAgent: false, started: false };
      await this.addUser();
      try {
        const started = await this.startUnlessAnswering(program);
        return { pipeDirectory: this.dirs.pipeDirectory, managedByAgent: true, started };
      } catch (e) {
        await this.removeUser();
        throw e;
      }
    });
    this.lease = lease;
    this.leases = 1;
    return lease;
  }

  /**
   * Checks, for a restart of ranks, that the daemon still answers; starts the agents' own
   * again when it is gone. Returns a note when something was wrong; null when all is well.
   */
  async ensureRunning(): Promise<string | null> {
    const lease = this.lease;
    const program = this.program();
    if (!lease || !program) return null;
    if (await this.answers(program, lease.pipeDirectory)) return null;
    if (!lease.managedByAgent) {
      return `the MPS control daemon on ${lease.pipeDirectory} (not started by an agent) no longer answers: ranks restarted now run without MPS until it is back`;
    }
    const log = controlLogTail(this.dirs.logDirectory, 2);
    await withFileLock(this.lockFile, () => this.startUnlessAnswering(program));
    return `the MPS control daemon on ${lease.pipeDirectory} had stopped answering${log.length > 0 ? ` (its control.log ends: ${log.join(' | ')})` : ''}; started it again for the restarted ranks`;
  }

  /** The pids of the held daemon's MPS servers (`get_server_list`); null when it does not answer or none is held. */
  async serverPids(): Promise<number[] | null> {
    const lease = this.lease;
    const program = this.program();
    if (!lease || !program) return null;
    const run = await sendMpsCommand(program, lease.pipeDirectory, this.opts.env, 'get_server_list', this.commandTimeoutMs);
    return run.code === 0 ? parseServerList(run.stdout) : null;
  }

  /**
   * What MPS says after a rank on a shared GPU failed: that the daemon no longer answers
   * (with its control.log), or the last lines of the agents' server.log (a crashed MPS
   * server logs there); null when there is nothing to add.
   */
  async failureContext(): Promise<string | null> {
    const lease = this.lease;
    const program = this.program();
    if (!lease || !program) return null;
    const own = lease.managedByAgent;
    if (!(await this.answers(program, lease.pipeDirectory))) {
      const log = own ? controlLogTail(this.dirs.logDirectory, 2) : [];
      return `the MPS control daemon on ${lease.pipeDirectory} no longer answers${log.length > 0 ? ` (its control.log ends: ${log.join(' | ')})` : ''}`;
    }
    const server = own ? mpsLogTail(this.dirs.logDirectory, 2, 'server.log') : [];
    return server.length > 0 ? `the MPS server log (${join(this.dirs.logDirectory, 'server.log')}) ends: ${server.join(' | ')}` : null;
  }

  /** Lets go of one acquire; the last user of the agents' daemon quits it. Returns what it did, for the log. */
  async release(): Promise<string | null> {
    if (!this.lease || --this.leases > 0) return null;
    const lease = this.lease;
    this.lease = undefined;
    if (!lease.managedByAgent) return null;
    const program = this.program();
    return withFileLock(this.lockFile, async () => {
      await this.removeUser();
      const others = await this.liveUsers();
      if (others.length > 0) return `left the MPS control daemon running for agent process(es) ${others.join(', ')} that use it too`;
      if (!program) return `cannot stop the MPS control daemon on ${lease.pipeDirectory}: ${notFound}`;
      const run = await sendMpsCommand(program, lease.pipeDirectory, this.opts.env, 'quit', this.commandTimeoutMs);
      if (run.code !== 0) return `the MPS control daemon on ${lease.pipeDirectory} did not take quit: ${MPS_CONTROL} ${describeRun(run, this.commandTimeoutMs)}`;
      return (await this.waitFor(async () => !(await this.answers(program, lease.pipeDirectory)), this.startTimeoutMs))
        ? `stopped the MPS control daemon on ${lease.pipeDirectory}`
        : `the MPS control daemon on ${lease.pipeDirectory} still answers ${(this.startTimeoutMs / 1000).toFixed(0)} s after quit`;
    });
  }

  /** Starts the agents' daemon unless it answers already; true when it started it. Call under the lock. */
  private async startUnlessAnswering(program: string): Promise<boolean> {
    const dirs = this.dirs;
    if (existsSync(dirs.pipeDirectory) && (await this.answers(program, dirs.pipeDirectory))) return false;
    await mkdir(dirs.pipeDirectory, { recursive: true, mode: 0o700 });
    await mkdir(dirs.logDirectory, { recursive: true, mode: 0o700 });
    const run = await runControl(program, ['-d'], controlEnv(this.opts.env, dirs), '', this.commandTimeoutMs);
    if (run.code === 0 && (await this.waitFor(() => this.answers(program, dirs.pipeDirectory), this.startTimeoutMs))) return true;
    // Another agent on this home may have won a race with its own -d: that daemon is as good.
    if (run.code !== 0 && !run.timedOut && (await this.answers(program, dirs.pipeDirectory))) return false;
    const log = controlLogTail(dirs.logDirectory);
    const how = run.code === 0 ? `started (${MPS_CONTROL} -d exited 0) but did not answer within ${(this.startTimeoutMs / 1000).toFixed(0)} s` : `did not start: ${MPS_CONTROL} -d ${describeRun(run, this.commandTimeoutMs)}`;
    // Whatever part of it runs is told to go, so nothing of a failed start is left behind.
    await sendMpsCommand(program, dirs.pipeDirectory, this.opts.env, 'quit', this.commandTimeoutMs);
    throw new MpsError(
      `the MPS control daemon (${program}, pipe directory ${dirs.pipeDirectory}) ${how}` +
        `${log.length > 0 ? `; its control.log (${join(dirs.logDirectory, 'control.log')}) ends: ${log.join(' | ')}` : `; it wrote no control.log in ${dirs.logDirectory}`}`,
    );
  }

  private async waitFor(cond: () => Promise<boolean>, timeoutMs: number): Promise<boolean> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      if (await cond()) return true;
      if (Date.now() >= deadline) return false;
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  private async addUser(): Promise<void> {
    await mkdir(this.usersDir, { recursive: true });
    await writeFile(join(this.usersDir, String(process.pid)), `${process.pid}\n`);
  }

  private async removeUser(): Promise<void> {
    await rm(join(this.usersDir, String(process.pid)), { force: true });
  }

  /** Other agent processes that use the agents' daemon (files of dead ones are removed). */
  private async liveUsers(): Promise<number[]> {
    let names: string[];
    try {
      names = await readdir(this.usersDir);
    } catch {
      return [];
    }
    const live: number[] = [];
    for (const name of names) {
      const pid = Number(name);
      if (!Number.isInteger(pid) || pid === process.pid) continue;
      if (isAlive(pid)) live.push(pid);
      else await rm(join(this.usersDir, name), { force: true });
    }
    return live;
  }
}
