/**
 * The restart policy of a launch's ranks (launch spec `restart`): when a rank that was not
 * asked to stop exits, `on-failure` restarts it after an exponential back-off
 * (backoffMs, 2x, 4x ... up to maxBackoffMs); `never` leaves it failed. A rank that fails
 * more than maxRestarts times in a row is given up on; one that stays ready for
 * `stableMs` (a minute) starts counting from zero again. Pure bookkeeping with timers;
 * TopologyRun does the restarting.
 */
import type { RestartPolicy } from '@afd/shared';

export interface RestartDecision {
  /** 1 for the first restart in a row, 2 for the next ... */
  attempt: number;
  delayMs: number;
}

interface Track {
  /** Restarts in a row (reset once the rank stays ready for stableMs). */
  streak: number;
  /** Restarts since the launch began. */
  total: number;
  /** A restart is scheduled and not done yet. */
  pending: NodeJS.Timeout | null;
  /** Resets the streak once the rank has stayed ready long enough. */
  stable: NodeJS.Timeout | null;
}

/** Default: a rank ready for a minute is healthy again. */
export const RESTART_STABLE_MS = 60_000;

export class RankRestarts<K> {
  private readonly tracks = new Map<K, Track>();

  constructor(
    private policy: RestartPolicy,
    private readonly stableMs = RESTART_STABLE_MS,
  ) {}

  /** The policy in effect. */
  get current(): RestartPolicy {
    return this.policy;
  }

  /**
   * Replaces the policy of a running launch: the next failure follows it (a streak already
   * over a lower maxRestarts gives up at that failure). Switched to never, the restarts
   * waiting out their back-off are cancelled; returns the ranks whose restart was cancelled.
   */
  setPolicy(policy: RestartPolicy): K[] {
    this.policy = policy;
    if (policy.policy !== 'never') return [];
    const cancelled: K[] = [];
    for (const [key, t] of this.tracks) {
      if (!t.pending) continue;
      clearTimeout(t.pending);
      t.pending = null;
      cancelled.push(key);
    }
    return cancelled;
  }

  private track(key: K): Track {
    let t = this.tracks.get(key);
    if (!t) {
      t = { streak: 0, total: 0, pending: null, stable: null };
      this.tracks.set(key, t);
    }
    return t;
  }

  /** Back-off before restart number `attempt` of a streak. */
  backoffMs(attempt: number): number {
    return Math.min(this.policy.maxBackoffMs, this.policy.backoffMs * 2 ** Math.max(0, attempt - 1));
  }

  /**
   * The rank failed: schedules `restart` after the back-off and says when, or returns
   * null when the policy gives up (never, or too many restarts in a row).
   */
  onFailed(key: K, restart: () => void): RestartDecision | null {
    const t = this.track(key);
    if (t.stable) clearTimeout(t.stable);
    t.stable = null;
    if (this.policy.policy === 'never' || t.streak >= this.policy.maxRestarts) return null;
    t.streak += 1;
    t.total += 1;
    const delayMs = this.backoffMs(t.streak);
    if (t.pending) clearTimeout(t.pending);
    t.pending = setTimeout(() => {
      t.pending = null;
      restart();
    }, delayMs);
    return { attempt: t.streak, delayMs };
  }

  /** The rank is ready: its streak ends once it stays so for stableMs. */
  onReady(key: K): void {
    const t = this.track(key);
    if (t.stable || t.streak === 0) return;
    t.stable = setTimeout(() => {
      t.stable = null;
      t.streak = 0;
    }, this.stableMs);
    t.stable.unref();
  }

  /** True while a restart of the rank is scheduled. */
  pending(key: K): boolean {
    return this.tracks.get(key)?.pending != null;
  }

  /** Restarts of the rank since the launch began. */
  total(key: K): number {
    return this.tracks.get(key)?.total ?? 0;
  }

  /** Restarts in a row now. */
  streak(key: K): number {
    return this.tracks.get(key)?.streak ?? 0;
  }

  /** Cancels every scheduled restart (the launch is stopping). */
  cancelAll(): void {
    for (const t of this.tracks.values()) {
      if (t.pending) clearTimeout(t.pending);
      if (t.stable) clearTimeout(t.stable);
      t.pending = null;
      t.stable = null;
    }
  }
}
