import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, utimes, writeFile } from 'node:fs/promises';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { withFileLock } from './fileLock.js';

let dir: string;
let lock: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'afd-lock-'));
  lock = join(dir, 'sub', 'work.lock');
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** The pid of a process that has exited. */
function deadPid(): number {
  const r = spawnSync(process.execPath, ['-e', '']);
  return r.pid!;
}

describe('withFileLock', () => {
  it('runs one holder at a time, creating the folder, and removes the lock after', async () => {
    const log: string[] = [];
    const holder = (name: string) =>
      withFileLock(
        lock,
        async () => {
          log.push(`${name} in`);
          await sleep(50);
          log.push(`${name} out`);
          return name;
        },
        { pollMs: 5 },
      );
    expect(await Promise.all([holder('a'), holder('b'), holder('c')])).toEqual(['a', 'b', 'c']);
    for (let i = 0; i < log.length; i += 2) expect(log[i + 1]).toBe(log[i]!.replace(' in', ' out'));
    expect(existsSync(lock)).toBe(false);
  });

  it('releases the lock when the work throws', async () => {
    await expect(withFileLock(lock, () => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
    expect(existsSync(lock)).toBe(false);
    expect(await withFileLock(lock, async () => 'next')).toBe('next');
  });

  it('waits for a live holder (this process) and goes in once it is released', async () => {
    await withFileLock(lock, async () => undefined); // creates the folder
    await writeFile(lock, JSON.stringify({ pid: process.pid, host: hostname(), token: 'other' }), { flag: 'wx' });
    let entered = false;
    const waiting = withFileLock(lock, async () => (entered = true), { pollMs: 5 });
    await sleep(100);
    expect(entered).toBe(false);
    await rm(lock);
    await waiting;
    expect(entered).toBe(true);
  });

  it('takes over the lock of a process that died, and one older than staleMs', async () => {
    await withFileLock(lock, async () => undefined);
    await writeFile(lock, JSON.stringify({ pid: deadPid(), host: hostname(), token: 'dead' }));
    expect(await withFileLock(lock, async () => 'took over a dead owner', { pollMs: 5 })).toBe('took over a dead owner');

    await writeFile(lock, JSON.stringify({ pid: process.pid, host: hostname(), token: 'old' }));
    const old = new Date(Date.now() - 60_000);
    await utimes(lock, old, old);
    expect(await withFileLock(lock, async () => 'took over an old lock', { pollMs: 5, staleMs: 30_000 })).toBe('took over an old lock');
    expect(existsSync(lock)).toBe(false);
  });

  it('leaves alone a lock that another holder took over meanwhile', async () => {
    await withFileLock(lock, async () => {
      await writeFile(lock, JSON.stringify({ pid: process.pid, host: hostname(), token: 'successor' }));
    });
    expect(JSON.parse(await readFile(lock, 'utf8'))).toMatchObject({ token: 'successor' });
  });
});
