/**
 * Watches the MPS servers of a launch's daemon. When an MPS server process dies, its clients
 * (the ranks on MPS-shared GPUs) do not fail: their CUDA calls hang on the lost server (seen
 * on an H100: no answer for minutes, nothing in any log). The watch lists the daemon's
 * servers (`get_server_list`) and checks each one seen is still alive; a server that is gone
 * is reported with the time it was last seen alive, so the launch can stop and restart the
 * ranks that were its clients (processes started before then) and leave newer ones alone.
 */

export interface MpsServerLoss {
  /** The servers found dead. */
  pids: number[];
  /** When they were last seen alive (Date.now()): ranks started after this are not their clients. */
  lastAliveMs: number;
}

export interface MpsServerWatchOptions {
  /** The daemon's server pids (get_server_list); null when the daemon did not answer. */
  listServers: () => Promise<number[] | null>;
  /** Default: signal 0. */
  isAlive?: (pid: number) => boolean;
  onLost: (loss: MpsServerLoss) => void;
  /** Default 2000 ms. */
  intervalMs?: number;
  now?: () => number;
}

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

export class MpsServerWatch {
  /** Servers seen alive, with when they last were. */
  private readonly seen = new Map<number, number>();
  private timer: NodeJS.Timeout | undefined;
  private busy = false;
  private stopped = false;

  constructor(private readonly opts: MpsServerWatchOptions) {}

  start(): void {
    if (this.timer) return;
    this.timer = setInterval(() => void this.tick(), this.opts.intervalMs ?? 2000);
    this.timer.unref();
  }

  stop(): void {
    this.stopped = true;
    clearInterval(this.timer);
    this.timer = undefined;
  }

  /** One look: servers seen before that are gone are reported; the daemon's current ones are remembered. */
  async tick(): Promise<void> {
    if (this.busy) return;
    this.busy = true;
    try {
      const alive = this.opts.isAlive ?? processAlive;
      const now = (this.opts.now ?? Date.now)();
      const dead: number[] = [];
      let lastAliveMs = 0;
      for (const [pid, at] of this.seen) {
        if (alive(pid)) this.seen.set(pid, now);
        else {
          dead.push(pid);
          lastAliveMs = Math.max(lastAliveMs, at);
          this.seen.delete(pid);
        }
      }
      const listed = await this.opts.listServers().catch(() => null);
      for (const pid of listed ?? []) if (!this.seen.has(pid) && !dead.includes(pid) && alive(pid)) this.seen.set(pid, now);
      if (dead.length > 0 && !this.stopped) this.opts.onLost({ pids: dead.sort((a, b) => a - b), lastAliveMs });
    } finally {
      this.busy = false;
    }
  }
}

/** The pids in `get_server_list`'s output (one per line; anything else is ignored). */
export function parseServerList(stdout: string): number[] {
  return stdout
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => /^\d+$/.test(l))
    .map(Number);
}

/** A rank process as the loss rule sees it. */
export interface MpsClientCandidate {
  readonly pid: number | undefined;
  readonly startedAtMs: number | undefined;
  readonly state: string;
}

/**
 * The ranks a lost server leaves hanging: running processes on MPS-shared GPUs started no
 * later than the server was last seen alive (a rank started since may be a client of the
 * server the daemon started after it, and is left alone).
 */
export function mpsServerClients<T extends MpsClientCandidate>(ranks: readonly T[], loss: MpsServerLoss, onMps: (rank: T) => boolean): T[] {
  return ranks.filter((r) => onMps(r) && r.pid !== undefined && r.startedAtMs !== undefined && r.startedAtMs <= loss.lastAliveMs && r.state !== 'failed' && r.state !== 'exited');
}
