/**
 * How much memory a process may still take on this host: the smallest of MemAvailable
 * (/proc/meminfo) and what each memory limit of its cgroup leaves (cgroup v2 memory.max,
 * v1 memory.limit_in_bytes; its own cgroup and every ancestor, since any of them can
 * OOM-kill it). A cgroup's usage counts without its inactive page cache, which the kernel
 * reclaims before it kills (the working set, as container runtimes count it). Linux only:
 * elsewhere, or when no file can be read, the answer is null and nothing is checked.
 * Files are read through `read`, so tests give their contents.
 */
import { readFileSync } from 'node:fs';

/** What the host has left for this process. */
export interface HostMemory {
  /** Bytes it may still take. */
  availableBytes: number;
  /** Where that figure comes from, for messages, e.g. "MemAvailable in /proc/meminfo". */
  source: string;
}

/** A file's text, or undefined when it cannot be read (absent, no permission). */
export type ReadText = (path: string) => string | undefined;

/** A cgroup limit at or above this is "no limit" (v1 writes 2^63 rounded down to a page; v2 writes "max"). */
const NO_LIMIT_BYTES = 2 ** 62;

export function readTextFile(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
}

/** "12.34 GiB". */
export function formatGiB(bytes: number): string {
  return `${(bytes / 2 ** 30).toFixed(2)} GiB`;
}

/** A "key value" line's value of a file like memory.stat or /proc/meminfo ("MemAvailable:  123 kB" -> 123). */
function statValue(text: string | undefined, key: string): number | undefined {
  const m = text === undefined ? null : new RegExp(`^${key}:?\\s+(\\d+)`, 'm').exec(text);
  return m ? Number(m[1]) : undefined;
}

function memAvailable(read: ReadText): HostMemory | null {
  const kib = statValue(read('/proc/meminfo'), 'MemAvailable');
  return kib === undefined ? null : { availableBytes: kib * 1024, source: 'MemAvailable in /proc/meminfo' };
}

/** A cgroup's path and every ancestor's ("/a/b" -> "/a/b", "/a", ""), under `root`. */
function cgroupDirs(root: string, path: string): string[] {
  const parts = path.split('/').filter((p) => p !== '');
  return parts.map((_, i) => `${root}/${parts.slice(0, parts.length - i).join('/')}`).concat(root);
}

interface CgroupFiles {
  root: string;
  limit: string;
  usage: string;
  /** memory.stat key of the reclaimable page cache. */
  inactiveFile: string;
}

const V2: CgroupFiles = { root: '/sys/fs/cgroup', limit: 'memory.max', usage: 'memory.current', inactiveFile: 'inactive_file' };
const V1: CgroupFiles = { root: '/sys/fs/cgroup/memory', limit: 'memory.limit_in_bytes', usage: 'memory.usage_in_bytes', inactiveFile: 'total_inactive_file' };

/** What each limited cgroup on the path leaves. */
function cgroupRoom(read: ReadText, files: CgroupFiles, path: string): HostMemory[] {
  const out: HostMemory[] = [];
  for (const dir of cgroupDirs(files.root, path)) {
    const limitText = read(`${dir}/${files.limit}`)?.trim();
    const limit = Number(limitText);
    if (limitText === undefined || limitText === '' || !Number.isFinite(limit) || limit >= NO_LIMIT_BYTES) continue; // "max", absent, unreadable
    const usage = Number(read(`${dir}/${files.usage}`)?.trim() ?? 0) || 0;
    const inactive = statValue(read(`${dir}/memory.stat`), files.inactiveFile) ?? 0;
    const used = Math.max(0, usage - inactive);
    out.push({ availableBytes: Math.max(0, limit - used), source: `the cgroup memory limit in ${dir}/${files.limit}: ${formatGiB(limit)}, of which ${formatGiB(used)} in use` });
  }
  return out;
}

/** The cgroup paths of this process from /proc/self/cgroup: v2 ("0::/path") and v1's memory controller ("N:memory:/path"). */
function cgroupPaths(text: string | undefined): { v2: string | null; v1: string | null } {
  let v2: string | null = null;
  let v1: string | null = null;
  for (const line of (text ?? '').split('\n')) {
    const m = /^(\d+):([^:]*):(.*)$/.exec(line.trim());
    if (!m) continue;
    if (m[1] === '0' && m[2] === '') v2 = m[3]!;
    else if (m[2]!.split(',').includes('memory')) v1 = m[3]!;
  }
  return { v2, v1 };
}

/** The tightest of MemAvailable and the cgroup limits; null when none can be read. */
export function readHostMemory(read: ReadText = readTextFile): HostMemory | null {
  const { v2, v1 } = cgroupPaths(read('/proc/self/cgroup'));
  const candidates = [
    memAvailable(read),
    ...(v2 === null ? [] : cgroupRoom(read, V2, v2)),
    ...(v1 === null ? [] : cgroupRoom(read, V1, v1)),
  ].filter((c): c is HostMemory => c !== null);
  if (candidates.length === 0) return null;
  return candidates.reduce((a, b) => (b.availableBytes < a.availableBytes ? b : a));
}
