/**
 * readHostMemory over given /proc and cgroup file contents: MemAvailable alone, cgroup v2
 * and v1 limits of the process's cgroup and its ancestors (page cache not counted as
 * used), "max" and v1's no-limit value, and nothing readable.
 */
import { describe, expect, it } from 'vitest';
import { formatGiB, readHostMemory, type ReadText } from './hostMemory.js';

const GiB = 2 ** 30;
const meminfo = (kib: number): string => `MemTotal:       32000000 kB\nMemFree:        1000000 kB\nMemAvailable:   ${kib} kB\nBuffers:          100 kB\n`;
const files =
  (map: Record<string, string>): ReadText =>
  (path) =>
    map[path];

describe('readHostMemory', () => {
  it('is MemAvailable when no cgroup limits memory', () => {
    const host = readHostMemory(files({ '/proc/meminfo': meminfo(20 * 1024 * 1024), '/proc/self/cgroup': '0::/\n', '/sys/fs/cgroup/memory.max': 'max\n' }));
    expect(host).toEqual({ availableBytes: 20 * GiB, source: 'MemAvailable in /proc/meminfo' });
  });

  it('cgroup v2: the limit less the usage without inactive page cache, when tighter than MemAvailable', () => {
    const host = readHostMemory(
      files({
        '/proc/meminfo': meminfo(20 * 1024 * 1024),
        '/proc/self/cgroup': '0::/system.slice/afd.service\n',
        '/sys/fs/cgroup/system.slice/afd.service/memory.max': `${8 * GiB}\n`,
        '/sys/fs/cgroup/system.slice/afd.service/memory.current': `${3 * GiB}\n`,
        '/sys/fs/cgroup/system.slice/afd.service/memory.stat': `anon 100\nfile 200\ninactive_file ${1 * GiB}\nactive_file 5\n`,
      }),
    );
    expect(host?.availableBytes).toBe(6 * GiB);
    expect(host?.source).toBe('the cgroup memory limit in /sys/fs/cgroup/system.slice/afd.service/memory.max: 8.00 GiB, of which 2.00 GiB in use');
  });

  it('cgroup v2: an ancestor\'s limit counts too, and the tightest wins', () => {
    const host = readHostMemory(
      files({
        '/proc/meminfo': meminfo(20 * 1024 * 1024),
        '/proc/self/cgroup': '0::/a/b\n',
        '/sys/fs/cgroup/a/b/memory.max': 'max\n',
        '/sys/fs/cgroup/a/memory.max': `${4 * GiB}\n`,
        '/sys/fs/cgroup/a/memory.current': `${1 * GiB}\n`,
      }),
    );
    expect(host?.availableBytes).toBe(3 * GiB);
    expect(host?.source).toContain('/sys/fs/cgroup/a/memory.max');
  });

  it('cgroup v1 (a hybrid host): the memory controller\'s limit; its no-limit value is ignored', () => {
    const read = (limit: string): ReadText =>
      files({
        '/proc/meminfo': meminfo(20 * 1024 * 1024),
        '/proc/self/cgroup': '9:name=systemd:/\n4:cpu,memory:/docker/abc\n0::/\n',
        '/sys/fs/cgroup/memory/docker/abc/memory.limit_in_bytes': limit,
        '/sys/fs/cgroup/memory/docker/abc/memory.usage_in_bytes': `${2 * GiB}\n`,
        '/sys/fs/cgroup/memory/docker/abc/memory.stat': `cache 5\ninactive_file 7\ntotal_inactive_file ${1 * GiB}\n`,
        '/sys/fs/cgroup/memory/memory.limit_in_bytes': '9223372036854771712\n',
      });
    expect(readHostMemory(read(`${5 * GiB}\n`))).toEqual({
      availableBytes: 4 * GiB,
      source: 'the cgroup memory limit in /sys/fs/cgroup/memory/docker/abc/memory.limit_in_bytes: 5.00 GiB, of which 1.00 GiB in use',
    });
    expect(readHostMemory(read('9223372036854771712\n'))?.source).toBe('MemAvailable in /proc/meminfo');
  });

  it('a container with its own cgroup namespace: the limit sits at the mount root', () => {
    const host = readHostMemory(
      files({ '/proc/meminfo': meminfo(20 * 1024 * 1024), '/proc/self/cgroup': '0::/\n', '/sys/fs/cgroup/memory.max': `${2 * GiB}\n`, '/sys/fs/cgroup/memory.current': `${3 * GiB}\n` }),
    );
    expect(host?.availableBytes).toBe(0); // over its limit already: nothing left, never negative
  });

  it('is null when nothing can be read (not Linux)', () => {
    expect(readHostMemory(files({}))).toBeNull();
  });

  it('reads this machine without throwing', () => {
    const host = readHostMemory();
    if (process.platform === 'linux') expect(host?.availableBytes).toBeGreaterThan(0);
  });
});

describe('formatGiB', () => {
  it('prints two decimals', () => {
    expect(formatGiB(1.5 * GiB)).toBe('1.50 GiB');
  });
});
