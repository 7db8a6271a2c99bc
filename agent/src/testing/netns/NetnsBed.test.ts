/**
 * The bed's teardown rules, without root: a fake `ip` (the bed's one boundary) keeps the
 * set of namespaces and reports, as the namespace's processes, real `sleep` processes
 * that the teardown must kill. Covers a normal teardown, a setup that fails half way, a
 * namespace that will not delete, the exit-time copy and the sweep of dead owners' beds.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { CommandResult, CommandRunner } from './commandRunner.js';
import { NetnsBed, sweepStaleBeds, SWITCH } from './NetnsBed.js';

const etc = mkdtempSync(join(tmpdir(), 'afd-bed-etc-'));
const sleepers: ChildProcess[] = [];
afterAll(() => {
  for (const s of sleepers) s.kill('SIGKILL');
  rmSync(etc, { recursive: true, force: true });
});

function sleeper(): ChildProcess {
  const c = spawn('sleep', ['300'], { stdio: 'ignore' });
  sleepers.push(c);
  return c;
}

function gone(c: ChildProcess): Promise<boolean> {
  if (c.exitCode !== null || c.signalCode !== null) return Promise.resolve(true);
  return new Promise((resolve) => {
    const t = setTimeout(() => resolve(false), 5000);
    c.once('exit', () => {
      clearTimeout(t);
      resolve(true);
    });
  });
}

/** A fake `ip`: namespaces in a set, `pids` from a map; `failOn` makes one command line fail. */
class FakeIp implements CommandRunner {
  readonly namespaces = new Set<string>();
  readonly pidsOf = new Map<string, ChildProcess[]>();
  readonly log: string[] = [];
  failOn: ((line: string) => boolean) | undefined;

  runSync(file: string, args: readonly string[]): CommandResult {
    const line = [file, ...args].join(' ');
    this.log.push(line);
    if (this.failOn?.(line)) return { code: 1, stdout: '', stderr: `fake failure of ${line}` };
    if (file !== 'ip') return { code: 0, stdout: '', stderr: '' };
    const [a, b, c] = args;
    if (a === 'netns' && b === 'list') return { code: 0, stdout: [...this.namespaces].map((n) => `${n} (id: 1)`).join('\n'), stderr: '' };
    if (a === 'netns' && b === 'add') {
      this.namespaces.add(c!);
      return { code: 0, stdout: '', stderr: '' };
    }
    if (a === 'netns' && b === 'del') {
      if (!this.namespaces.delete(c!)) return { code: 1, stdout: '', stderr: `Cannot remove namespace file "/run/netns/${c}": No such file or directory` };
      return { code: 0, stdout: '', stderr: '' };
    }
    if (a === 'netns' && b === 'pids') {
      const live = (this.pidsOf.get(c!) ?? []).filter((p) => p.exitCode === null && p.signalCode === null);
      return { code: 0, stdout: live.map((p) => p.pid).join('\n'), stderr: '' };
    }
    return { code: 0, stdout: '', stderr: '' }; // link / addr commands
  }

  async run(file: string, args: readonly string[]): Promise<CommandResult> {
    return this.runSync(file, args);
  }
}

const hosts = ['host-a', 'host-b', 'console'];

describe('NetnsBed teardown', () => {
  it('kills what runs in its namespaces, deletes them and their hosts files, and leaves no exit hook', async () => {
    const ip = new FakeIp();
    const hooks = process.listenerCount('exit');
    const bed = await NetnsBed.create({ hosts, runner: ip, etcNetnsDir: etc });
    expect(process.listenerCount('exit')).toBe(hooks + 1);
    expect([...ip.namespaces].sort()).toEqual([...hosts, SWITCH].map((h) => bed.namespace(h)).sort());
    expect(existsSync(join(etc, bed.namespace('host-a'), 'hosts'))).toBe(true);
    const inA = sleeper();
    const inB = sleeper();
    ip.pidsOf.set(bed.namespace('host-a'), [inA]);
    ip.pidsOf.set(bed.namespace('host-b'), [inB]);
    const dir = bed.dir;
    await bed.teardown();
    expect(await gone(inA)).toBe(true);
    expect(await gone(inB)).toBe(true);
    expect(ip.namespaces.size).toBe(0);
    for (const h of hosts) expect(existsSync(join(etc, bed.namespace(h)))).toBe(false);
    expect(existsSync(dir)).toBe(false);
    expect(process.listenerCount('exit')).toBe(hooks);
    // Processes are killed before their namespace goes (a namespace outlives `del` while a process holds it).
    const firstDel = ip.log.findIndex((l) => l.startsWith('ip netns del'));
    const lastPids = ip.log.map((l, i) => (l.startsWith('ip netns pids') ? i : -1)).filter((i) => i >= 0).pop()!;
    expect(lastPids).toBeLessThan(firstDel);
    await bed.teardown(); // idempotent
  });

  it('tears down what it made when setup fails half way, and rethrows the setup error', async () => {
    const ip = new FakeIp();
    ip.failOn = (line) => line.includes('netns add') && line.endsWith('-host-b');
    const hooks = process.listenerCount('exit');
    await expect(NetnsBed.create({ hosts, runner: ip, etcNetnsDir: etc })).rejects.toThrow(/netns add .*-host-b.*fake failure/);
    expect(ip.namespaces.size).toBe(0);
    expect(ip.log.filter((l) => l.startsWith('ip netns del')).length).toBe(2); // switch and host-a
    expect(process.listenerCount('exit')).toBe(hooks);
  });

  it('reports a namespace it could not delete, after removing everything else', async () => {
    const ip = new FakeIp();
    const bed = await NetnsBed.create({ hosts, runner: ip, etcNetnsDir: etc });
    const stuck = bed.namespace('host-b');
    ip.failOn = (line) => line === `ip netns del ${stuck}`;
    await expect(bed.teardown()).rejects.toThrow(new RegExp(`ip netns del ${stuck}[\\s\\S]*namespaces still present: ${stuck}`));
    expect([...ip.namespaces]).toEqual([stuck]);
    for (const h of hosts) expect(existsSync(join(etc, bed.namespace(h)))).toBe(false);
  });

  it('has a blocking copy for process exit that kills and deletes everything', async () => {
    const ip = new FakeIp();
    const bed = await NetnsBed.create({ hosts, runner: ip, etcNetnsDir: etc });
    const inC = sleeper();
    ip.pidsOf.set(bed.namespace('console'), [inC]);
    // What process.once('exit') runs: call the registered hook directly.
    const hook = process.listeners('exit').at(-1) as () => void;
    hook();
    process.off('exit', hook);
    expect(await gone(inC)).toBe(true);
    expect(ip.namespaces.size).toBe(0);
    await bed.teardown(); // nothing left to do
  });

  it('sweeps beds whose owner process is gone, and only those', async () => {
    const ip = new FakeIp();
    const dead = spawn('true');
    await new Promise((r) => dead.once('exit', r));
    const deadBed = [`afdbed-${dead.pid}-1-switch`, `afdbed-${dead.pid}-1-host-a`];
    const liveBed = `afdbed-${process.ppid}-1-host-a`; // our parent is alive
    for (const n of [...deadBed, liveBed, 'someone-elses-ns']) ip.namespaces.add(n);
    const inDead = sleeper();
    ip.pidsOf.set(deadBed[1]!, [inDead]);
    expect((await sweepStaleBeds(ip, etc)).sort()).toEqual([...deadBed].sort());
    expect(await gone(inDead)).toBe(true);
    expect([...ip.namespaces].sort()).toEqual([liveBed, 'someone-elses-ns'].sort());
  });

  it('refuses host names that are not plain, or duplicated', async () => {
    const ip = new FakeIp();
    await expect(NetnsBed.create({ hosts: ['host a'], runner: ip, etcNetnsDir: etc })).rejects.toThrow(/host name "host a"/);
    await expect(NetnsBed.create({ hosts: ['a', 'a'], runner: ip, etcNetnsDir: etc })).rejects.toThrow(/unique/);
    await expect(NetnsBed.create({ hosts: [SWITCH], runner: ip, etcNetnsDir: etc })).rejects.toThrow(/not "switch"/);
    expect(ip.namespaces.size).toBe(0);
  });
});
