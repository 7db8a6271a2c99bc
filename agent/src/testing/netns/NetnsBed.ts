/**
 * A network of hosts made of Linux network namespaces, for tests that need real hosts:
 * each host is a namespace with its own address on 192.0.2.0/24 (TEST-NET-1, RFC 5737,
 * never routed, and only inside these namespaces), joined by veth pairs to a bridge that
 * lives in a switch namespace of its own, so the host's (root) namespace never holds a
 * link of the bed. Host names resolve through /etc/netns/<ns>/hosts, which `ip netns exec`
 * mounts over /etc/hosts, and every process the bed starts gets the host name as its
 * hostname (a UTS namespace of its own).
 *
 * Teardown is guaranteed: teardown() (and, if the test process dies first, a blocking
 * copy on process exit; and, if even that never ran, the next bed of any test process,
 * which removes beds whose owner pid is gone) stops the bed's processes, kills whatever
 * is still inside its namespaces, deletes the namespaces (and with them every veth and
 * the bridge) and the hosts files, then checks that nothing is left.
 */
import { spawn } from 'node:child_process';
import { chmodSync, mkdtempSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BedProcess } from './BedProcess.js';
import { systemRunner, mustRun, type CommandResult, type CommandRunner } from './commandRunner.js';

/** Prefix of every namespace a bed creates: afdbed-<owner pid>-<n>-<host>. */
export const BED_PREFIX = 'afdbed';
/** The switch namespace's name suffix (it holds the bridge and any relays). */
export const SWITCH = 'switch';
const SUBNET = '192.0.2';
const safeName = /^[a-z][a-z0-9-]{0,14}$/;

export interface NetnsBedOptions {
  /** Host names, e.g. ["host-a", "host-b", "console"]: one namespace each, in this order (.10, .11, ...). */
  hosts: readonly string[];
  runner?: CommandRunner;
  /** Where etc files go (default /etc/netns, what `ip netns exec` reads). */
  etcNetnsDir?: string;
  /** Give each process the host name as hostname (unshare --uts; default true). */
  hostnames?: boolean;
}

export interface SpawnOptions {
  env?: NodeJS.ProcessEnv;
  /** Working directory (default the test's). */
  cwd?: string;
  /** Keep stdin as a pipe (default: ignored). */
  stdin?: boolean;
  /** Run it in a process group of its own, so signals reach its children too (e.g. a shell loop). */
  group?: boolean;
}

let sequence = 0;

/** True while a process with this pid runs (a zombie, dead but not yet reaped, does not). */
export function isRunning(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return !/^\d+ \(.*\) [ZX]/s.test(stat);
  } catch {
    return false;
  }
}

/** Names of the namespaces `ip netns list` reports. */
function parseNetnsList(text: string): string[] {
  return text
    .split('\n')
    .map((l) => l.trim().split(/\s+/)[0] ?? '')
    .filter(Boolean);
}

export class NetnsBed {
  /** afdbed-<pid>-<n>: the prefix of this bed's namespaces. */
  readonly id: string;
  /** Temp folder of this bed (certificates, tokens, scripts); removed at teardown. */
  readonly dir: string;
  private readonly runner: CommandRunner;
  private readonly etcDir: string;
  private readonly hostNames: readonly string[];
  private readonly processes: BedProcess[] = [];
  /** Namespaces this bed may have created, switch first. */
  private readonly namespaces: string[] = [];
  /** Per host namespace: host name -> address its hosts file maps it to (relays override). */
  private readonly routes = new Map<string, Map<string, string>>();
  private tornDown = false;
  private readonly onExit = (): void => this.teardownSync();

  private constructor(private readonly opts: NetnsBedOptions) {
    this.runner = opts.runner ?? systemRunner;
    this.etcDir = opts.etcNetnsDir ?? '/etc/netns';
    this.hostNames = opts.hosts;
    this.id = `${BED_PREFIX}-${process.pid}-${++sequence}`;
    this.dir = mkdtempSync(join(tmpdir(), `${this.id}-`));
    process.once('exit', this.onExit);
  }

  /** Builds the network; on any failure it tears down what it made and rethrows. */
  static async create(opts: NetnsBedOptions): Promise<NetnsBed> {
    for (const h of opts.hosts) {
      if (!safeName.test(h) || h === SWITCH) throw new Error(`bed host name "${h}" must be 1-15 of a-z, 0-9, - (starting with a letter), and not "${SWITCH}"`);
    }
    if (new Set(opts.hosts).size !== opts.hosts.length) throw new Error(`bed host names must be unique: ${opts.hosts.join(', ')}`);
    if (opts.hosts.length > 80) throw new Error('a bed has at most 80 hosts');
    const runner = opts.runner ?? systemRunner;
    await sweepStaleBeds(runner, opts.etcNetnsDir ?? '/etc/netns');
    const bed = new NetnsBed(opts);
    try {
      await bed.build();
    } catch (e) {
      await bed.teardown().catch((t: unknown) => {
        throw new AggregateError([e, t], `bed setup failed (${(e as Error).message}) and so did its teardown (${(t as Error).message})`);
      });
      throw e;
    }
    return bed;
  }

  /** Namespace of a host (or of the switch). */
  namespace(host: string): string {
    if (host !== SWITCH && !this.hostNames.includes(host)) throw new Error(`no host "${host}" in this bed (hosts: ${this.hostNames.join(', ')})`);
    return `${this.id}-${host}`;
  }

  /** The host's own address. */
  address(host: string): string {
    const i = this.hostNames.indexOf(host);
    if (i < 0) throw new Error(`no host "${host}" in this bed (hosts: ${this.hostNames.join(', ')})`);
    return `${SUBNET}.${10 + i}`;
  }

  /** The address, on the switch, of the relay that stands in for `host` (see routeVia). */
  relayAddress(host: string): string {
    return `${SUBNET}.${110 + this.hostNames.indexOf(host)}`;
  }

  get hosts(): readonly string[] {
    return this.hostNames;
  }

  private async ip(args: string[]): Promise<string> {
    return mustRun(this.runner, 'ip', args);
  }

  private async build(): Promise<void> {
    const sw = this.namespace(SWITCH);
    this.namespaces.push(sw);
    await this.ip(['netns', 'add', sw]);
    await this.ip(['-n', sw, 'link', 'set', 'lo', 'up']);
    await this.ip(['-n', sw, 'link', 'add', 'br0', 'type', 'bridge']);
    await this.ip(['-n', sw, 'link', 'set', 'br0', 'up']);
    for (const host of this.hostNames) {
      const ns = this.namespace(host);
      this.namespaces.push(ns);
      await this.ip(['netns', 'add', ns]);
      // Both ends are made inside namespaces: the root namespace never sees them.
      await this.ip(['-n', sw, 'link', 'add', `v-${host}`, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', ns]);
      await this.ip(['-n', sw, 'link', 'set', `v-${host}`, 'master', 'br0']);
      await this.ip(['-n', sw, 'link', 'set', `v-${host}`, 'up']);
      await this.ip(['-n', ns, 'addr', 'add', `${this.address(host)}/24`, 'dev', 'eth0']);
      await this.ip(['-n', ns, 'link', 'set', 'eth0', 'up']);
      await this.ip(['-n', ns, 'link', 'set', 'lo', 'up']);
      this.routes.set(host, new Map(this.hostNames.map((h) => [h, this.address(h)])));
      this.writeHostsFile(host);
    }
  }

  private writeHostsFile(host: string): void {
    const dir = join(this.etcDir, this.namespace(host));
    mkdirSync(dir, { recursive: true });
    const lines = ['127.0.0.1 localhost', '::1 localhost ip6-localhost'];
    for (const [name, addr] of this.routes.get(host) ?? []) lines.push(`${addr} ${name}`);
    // Written in place: `ip netns exec` bind-mounts this file, so running processes see the change.
    writeFileSync(join(dir, 'hosts'), `${lines.join('\n')}\n`);
  }

  /**
   * Makes every other host (not `except`) reach `target` by name at `address` (a relay on
   * the switch), or, with null, at its own address again. Connections already open keep
   * their path; new ones resolve again.
   */
  routeVia(target: string, address: string | null, except: readonly string[] = []): void {
    this.address(target);
    for (const host of this.hostNames) {
      if (host === target || except.includes(host)) continue;
      this.routes.get(host)!.set(target, address ?? this.address(target));
      this.writeHostsFile(host);
    }
  }

  /** Adds an address to the switch's bridge (where relays listen). */
  async addSwitchAddress(address: string): Promise<void> {
    await this.ip(['-n', this.namespace(SWITCH), 'addr', 'add', `${address}/24`, 'dev', 'br0']);
  }

  /** Cuts (down) or restores (up) the host's link to the switch: `ip link set v-<host> down|up`. */
  async setLink(host: string, state: 'up' | 'down'): Promise<void> {
    this.address(host);
    await this.ip(['-n', this.namespace(SWITCH), 'link', 'set', `v-${host}`, state]);
  }

  /** The argument vector that runs `file args` inside the host's namespace. */
  commandIn(host: string, file: string, args: readonly string[]): { file: string; args: string[] } {
    const ns = this.namespace(host);
    if (this.opts.hostnames === false || host === SWITCH) return { file: 'ip', args: ['netns', 'exec', ns, file, ...args] };
    // unshare, sh and the program are exec'ed in turn: the spawned pid is the program's.
    return { file: 'ip', args: ['netns', 'exec', ns, 'unshare', '--uts', 'sh', '-c', 'hostname "$0" && exec "$@"', host, file, ...args] };
  }

  /** Starts a long-running process inside the host's namespace. */
  spawn(host: string, name: string, file: string, args: readonly string[], opts: SpawnOptions = {}): BedProcess {
    if (this.tornDown) throw new Error(`bed ${this.id} is torn down`);
    const cmd = this.commandIn(host, file, args);
    const child = spawn(cmd.file, cmd.args, {
      env: { ...process.env, ...opts.env },
      cwd: opts.cwd,
      stdio: [opts.stdin ? 'pipe' : 'ignore', 'pipe', 'pipe'],
      detached: opts.group === true,
    });
    const p = new BedProcess(`${name} on ${host}`, child, opts.group === true);
    this.processes.push(p);
    return p;
  }

  /** Runs a short command inside the host's namespace and resolves with its result. */
  exec(host: string, file: string, args: readonly string[], timeoutMs = 20_000): Promise<CommandResult> {
    const cmd = this.commandIn(host, file, args);
    return this.runner.run(cmd.file, cmd.args, timeoutMs);
  }

  /**
   * A script that runs `exe` inside the host's namespace with the arguments it is given
   * (for programs that are started by other programs, e.g. Playwright's Chromium). Open
   * file descriptors pass through (`ip netns exec` execs).
   */
  wrapperScript(host: string, exe: string): string {
    if (!/^[\w./+-]+$/.test(exe)) throw new Error(`wrapperScript: "${exe}" must be a plain path`);
    const file = join(this.dir, `in-${host}-${exe.split('/').pop()}`);
    writeFileSync(file, `#!/bin/sh\nexec ip netns exec ${this.namespace(host)} ${exe} "$@"\n`);
    chmodSync(file, 0o755);
    return file;
  }

  /** Pids of every process inside the host's namespace (`ip netns pids`). */
  async pids(host: string): Promise<number[]> {
    const r = await this.runner.run('ip', ['netns', 'pids', this.namespace(host)]);
    return r.code === 0 ? r.stdout.split(/\s+/).filter(Boolean).map(Number) : [];
  }

  /**
   * Stops the bed's processes (SIGTERM, SIGKILL after graceMs), kills anything else in its
   * namespaces, deletes them and their hosts files and the temp folder, then checks that
   * no namespace, link or process is left. Throws a list of what could not be removed.
   */
  async teardown(graceMs = 5000): Promise<void> {
    if (this.tornDown) return;
    this.tornDown = true;
    const problems: string[] = [];
    await Promise.all(this.processes.map((p) => p.stop(graceMs).catch((e: unknown) => problems.push(`${p.name}: ${(e as Error).message}`))));
    for (const ns of this.namespaces) {
      const left = await this.killAllIn(ns);
      if (left.length > 0) problems.push(`processes ${left.join(', ')} survived SIGKILL in ${ns}`);
    }
    const existing = parseNetnsList((await this.runner.run('ip', ['netns', 'list'])).stdout);
    for (const ns of [...this.namespaces].reverse()) {
      if (!existing.includes(ns)) continue;
      const r = await this.runner.run('ip', ['netns', 'del', ns]);
      if (r.code !== 0) problems.push(`ip netns del ${ns}: ${r.stderr.trim()}`);
    }
    for (const ns of this.namespaces) rmSync(join(this.etcDir, ns), { recursive: true, force: true });
    rmSync(this.dir, { recursive: true, force: true });
    const after = parseNetnsList((await this.runner.run('ip', ['netns', 'list'])).stdout).filter((n) => this.namespaces.includes(n));
    if (after.length > 0) problems.push(`namespaces still present: ${after.join(', ')}`);
    const living = this.processes.filter((p) => p.pid > 0 && p.exit === undefined && isRunning(p.pid)).map((p) => `${p.name} (pid ${p.pid})`);
    if (living.length > 0) problems.push(`still running: ${living.join(', ')}`);
    process.off('exit', this.onExit);
    if (problems.length > 0) throw new Error(`bed ${this.id} teardown left things behind:\n  ${problems.join('\n  ')}`);
  }

  /** SIGKILLs every process in a namespace until none is left (bounded); returns survivors. */
  private async killAllIn(ns: string): Promise<number[]> {
    const t0 = Date.now();
    for (;;) {
      const r = await this.runner.run('ip', ['netns', 'pids', ns]);
      const pids = r.code === 0 ? r.stdout.split(/\s+/).filter(Boolean).map(Number) : [];
      if (pids.length === 0 || Date.now() - t0 > 10_000) return pids;
      for (const pid of pids) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          // gone meanwhile
        }
      }
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  /** The last-chance teardown when the test process exits without calling teardown(). */
  private teardownSync(): void {
    if (this.tornDown) return;
    this.tornDown = true;
    removeBedSync(this.runner, this.namespaces, this.etcDir);
    for (const p of this.processes) p.signal('SIGKILL');
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** Kills everything in the namespaces and deletes them, blocking (exit handlers, stale beds). */
function removeBedSync(runner: CommandRunner, namespaces: readonly string[], etcDir: string): void {
  for (const ns of namespaces) {
    for (let round = 0; round < 20; round++) {
      const pids = runner.runSync('ip', ['netns', 'pids', ns]).stdout.split(/\s+/).filter(Boolean).map(Number);
      if (pids.length === 0) break;
      for (const pid of pids) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          // gone meanwhile
        }
      }
    }
  }
  for (const ns of [...namespaces].reverse()) runner.runSync('ip', ['netns', 'del', ns]);
  for (const ns of namespaces) rmSync(join(etcDir, ns), { recursive: true, force: true });
}

/** Removes beds left by test processes that died before they could tear down. */
export async function sweepStaleBeds(runner: CommandRunner = systemRunner, etcDir = '/etc/netns'): Promise<string[]> {
  const r = await runner.run('ip', ['netns', 'list']);
  if (r.code !== 0) return [];
  const stale = parseNetnsList(r.stdout).filter((ns) => {
    const m = new RegExp(`^${BED_PREFIX}-(\\d+)-\\d+-`).exec(ns);
    return m !== null && Number(m[1]) !== process.pid && !isRunning(Number(m[1]));
  });
  if (stale.length > 0) removeBedSync(runner, stale, etcDir);
  return stale;
}
