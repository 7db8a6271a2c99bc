/**
 * A lock file for work that several processes may start at once on one home folder (the
 * default model, made on first use by every agent, role and CLI command that needs it).
 * Taken by creating the file exclusively ('wx'); it names its owner (pid, host). A lock
 * whose owner died (same host, pid gone) or that was created more than staleMs ago is taken
 * over; waiters poll meanwhile.
 *
 * Taking over a stale lock is check-then-act, so two waiters may, rarely, both take one
 * over: the work a lock guards must stay correct without it (make-model writes into a
 * temporary folder and renames it into place). The lock spares the duplicate work and the
 * races of two processes replacing the same folder at once.
 */
import { randomBytes } from 'node:crypto';
import { mkdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import { dirname } from 'node:path';

export interface FileLockOptions {
  /** How often a waiter looks again, ms (default 100). */
  pollMs?: number;
  /** A lock older than this is abandoned whoever holds it, ms (default 10 min; the guarded work takes seconds). */
  staleMs?: number;
}

/** What a lock file holds. */
interface LockOwner {
  pid: number;
  host: string;
  /** Tells this holder's lock from a later one at the same path. */
  token: string;
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM'; // alive, another user's
  }
}

async function readOwner(path: string): Promise<LockOwner | null> {
  try {
    return JSON.parse(await readFile(path, 'utf8')) as LockOwner;
  } catch {
    return null; // gone, or being written by its owner right now
  }
}

/** True when the lock at `path` may be taken over; false when it is live (or already gone). */
async function isStale(path: string, staleMs: number): Promise<boolean> {
  let ageMs: number;
  try {
    ageMs = Date.now() - (await stat(path)).mtimeMs;
  } catch {
    return false; // released meanwhile: just try again
  }
  if (ageMs > staleMs) return true;
  const owner = await readOwner(path);
  return owner !== null && owner.host === hostname() && !isAlive(owner.pid);
}

/** Creates the lock file; false when it exists. */
async function tryCreate(path: string, owner: LockOwner): Promise<boolean> {
  try {
    await writeFile(path, `${JSON.stringify(owner)}\n`, { flag: 'wx' });
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw new Error(`cannot create the lock file ${path}: ${(err as Error).message}. Check that its folder is writable`);
  }
}

/** Runs `work` holding the lock file `path` (created, with its folder, when free; waited for when held). */
export async function withFileLock<T>(path: string, work: () => Promise<T>, opts: FileLockOptions = {}): Promise<T> {
  const owner: LockOwner = { pid: process.pid, host: hostname(), token: randomBytes(8).toString('hex') };
  await mkdir(dirname(path), { recursive: true });
  while (!(await tryCreate(path, owner))) {
    if (await isStale(path, opts.staleMs ?? 600_000)) await rm(path, { force: true });
    else await new Promise((resolve) => setTimeout(resolve, opts.pollMs ?? 100));
  }
  try {
    return await work();
  } finally {
    // Only our own lock: a holder that outlived staleMs may have lost it to another.
    if ((await readOwner(path))?.token === owner.token) await rm(path, { force: true });
  }
}
