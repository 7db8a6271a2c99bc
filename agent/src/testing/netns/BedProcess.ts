/**
 * A process the test bed started inside a namespace: its output lines (stdout and
 * stderr, bounded), a bounded wait for a line, and a stop that escalates from SIGTERM to
 * SIGKILL. The bed kills whatever is left in its namespaces at teardown anyway.
 */
import type { ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { stopGracefully } from '../../util/stopGracefully.js';

export interface ProcessExit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

const maxLines = 4000;

export class BedProcess {
  readonly lines: string[] = [];
  /** Lines of stdout only (JSON events of agents and the launch CLI). */
  readonly stdoutLines: string[] = [];
  readonly exited: Promise<ProcessExit>;
  private exitValue: ProcessExit | undefined;
  private readonly waiters = new Set<(line: string) => void>();
  /** Lines seen so far, including those dropped from `lines`. */
  private totalLines = 0;

  constructor(
    /** What it is, for messages: "afd-agent serve on host-a". */
    readonly name: string,
    readonly child: ChildProcess,
    /** Signals go to its whole process group (it was started as a group leader). */
    private readonly group = false,
  ) {
    this.exited = new Promise((resolve) => {
      child.once('exit', (code, signal) => {
        this.exitValue = { code, signal };
        resolve(this.exitValue);
      });
      child.once('error', () => {
        this.exitValue ??= { code: 127, signal: null };
        resolve(this.exitValue);
      });
    });
    const take = (stream: 'stdout' | 'stderr') => (line: string) => {
      this.lines.push(line);
      this.totalLines += 1;
      if (this.lines.length > maxLines) this.lines.shift();
      if (stream === 'stdout') {
        this.stdoutLines.push(line);
        if (this.stdoutLines.length > maxLines) this.stdoutLines.shift();
      }
      for (const w of this.waiters) w(line);
    };
    if (child.stdout) createInterface({ input: child.stdout }).on('line', take('stdout'));
    if (child.stderr) createInterface({ input: child.stderr }).on('line', take('stderr'));
  }

  get pid(): number {
    return this.child.pid ?? -1;
  }

  /** Exit status once it has exited; undefined while it runs. */
  get exit(): ProcessExit | undefined {
    return this.exitValue;
  }

  /** The last lines of output, for failure messages. */
  tail(n = 40): string {
    return this.lines.slice(-n).join('\n');
  }

  /**
   * Resolves with the first line (already seen or to come) that matches; rejects after
   * timeoutMs, or when the process exits first, with its last output.
   */
  waitForLine(match: RegExp | ((line: string) => boolean), timeoutMs: number, what: string, fromIndex = 0): Promise<string> {
    const test = typeof match === 'function' ? match : (l: string) => match.test(l);
    const first = this.totalLines - this.lines.length;
    const seen = this.lines.slice(Math.max(0, fromIndex - first)).find(test);
    if (seen !== undefined) return Promise.resolve(seen);
    return new Promise((resolve, reject) => {
      const done = (fn: () => void): void => {
        clearTimeout(timer);
        this.waiters.delete(onLine);
        fn();
      };
      const onLine = (line: string): void => {
        if (test(line)) done(() => resolve(line));
      };
      const timer = setTimeout(() => done(() => reject(new Error(`${this.name}: no ${what} within ${timeoutMs} ms; last output:\n${this.tail()}`))), timeoutMs);
      this.waiters.add(onLine);
      void this.exited.then((e) => done(() => reject(new Error(`${this.name} exited (${e.signal ?? e.code}) before ${what}; last output:\n${this.tail()}`))));
    });
  }

  /** Index to pass as fromIndex so that only lines after now match. */
  mark(): number {
    return this.totalLines;
  }

  /** Sends a signal; false when it has already exited. */
  signal(sig: NodeJS.Signals): boolean {
    if (this.exitValue) return false;
    try {
      if (this.group && this.pid > 0) {
        process.kill(-this.pid, sig);
        return true;
      }
      return this.child.kill(sig);
    } catch {
      return false;
    }
  }

  /** SIGTERM, then SIGKILL after graceMs; resolves with the exit status. */
  async stop(graceMs = 5000): Promise<ProcessExit> {
    if (this.exitValue) return this.exitValue;
    return stopGracefully((sig) => this.signal(sig), this.exited, graceMs);
  }
}
