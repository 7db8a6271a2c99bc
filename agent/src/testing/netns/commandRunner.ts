/**
 * The one boundary of the network-namespace test bed: running `ip`, `openssl` and
 * friends as argument vectors (never a shell string). The real runner execs them; the
 * bed's unit test passes a recording fake, so the teardown rules are checked without root.
 */
import { execFile, execFileSync } from 'node:child_process';

export interface CommandResult {
  code: number;
  stdout: string;
  stderr: string;
}

export interface CommandRunner {
  /** Runs `file args...`; resolves with the exit code and output (never rejects for a non-zero exit). */
  run(file: string, args: readonly string[], timeoutMs?: number): Promise<CommandResult>;
  /** The same, blocking (the bed's last-chance teardown when the test process exits). */
  runSync(file: string, args: readonly string[], timeoutMs?: number): CommandResult;
}

function exitCodeOf(err: unknown): number {
  const e = err as { status?: unknown; code?: unknown };
  if (typeof e.status === 'number') return e.status;
  if (typeof e.code === 'number') return e.code;
  return 127; // not found, killed by the timeout, ...
}

/** Runs real commands. */
export const systemRunner: CommandRunner = {
  run(file, args, timeoutMs = 20_000) {
    return new Promise((resolve) => {
      execFile(file, [...args], { timeout: timeoutMs, encoding: 'utf8', maxBuffer: 16 << 20 }, (err, stdout, stderr) => {
        const text = err && !stderr ? (err as Error).message : stderr;
        resolve({ code: err ? exitCodeOf(err) : 0, stdout: stdout ?? '', stderr: text ?? '' });
      });
    });
  },
  runSync(file, args, timeoutMs = 20_000) {
    try {
      const stdout = execFileSync(file, [...args], { timeout: timeoutMs, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
      return { code: 0, stdout, stderr: '' };
    } catch (err) {
      const e = err as { stdout?: string; stderr?: string; message?: string };
      return { code: exitCodeOf(err), stdout: e.stdout ?? '', stderr: e.stderr || e.message || '' };
    }
  },
};

/** Runs a command and throws, with the command line and its stderr, when it fails. */
export async function mustRun(runner: CommandRunner, file: string, args: readonly string[], timeoutMs?: number): Promise<string> {
  const r = await runner.run(file, args, timeoutMs);
  if (r.code !== 0) throw new Error(`\`${[file, ...args].join(' ')}\` failed (exit ${r.code}): ${r.stderr.trim() || r.stdout.trim()}`);
  return r.stdout;
}
