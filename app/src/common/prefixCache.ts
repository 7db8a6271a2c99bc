/**
 * Prefix-cache hit rates from the cumulative counters an attention or colocated rank
 * reports (`kv.prefixQueryTokens` / `kv.prefixHitTokens`, vLLM's prefix_cache_queries and
 * prefix_cache_hits): tokens queried and found over a trailing window, and since the rank
 * started. Pure functions; the DashboardModel applies them to its snapshot history.
 */

/** Prefix-cache tokens: looked up (queried) and, of those, found (hit). */
export interface PrefixTokens {
  queried: number;
  hit: number;
}

/**
 * Tokens queried and hit between the oldest and the newest of `samples` (oldest first;
 * null entries, snapshots without KV stats, are skipped). A counter that goes down means
 * the rank restarted and counts from zero again: the increase across the restart is the
 * new value itself (how Prometheus' rate() reads a counter reset), so a restart never
 * yields a negative or inflated count.
 */
export function prefixIncrease(samples: Iterable<PrefixTokens | null>): PrefixTokens {
  let queried = 0;
  let hit = 0;
  let prev: PrefixTokens | null = null;
  for (const s of samples) {
    if (!s) continue;
    if (prev) {
      const reset = s.queried < prev.queried || s.hit < prev.hit;
      queried += reset ? s.queried : s.queried - prev.queried;
      hit += reset ? s.hit : s.hit - prev.hit;
    }
    prev = s;
  }
  return { queried, hit };
}

/** hit / queried, 0..1; null when nothing was queried (no rate, not 0%). */
export function hitRate(t: PrefixTokens): number | null {
  if (!(t.queried > 0)) return null;
  return Math.min(1, Math.max(0, t.hit / t.queried));
}

/** Element-wise sum. */
export function addTokens(a: PrefixTokens, b: PrefixTokens): PrefixTokens {
  return { queried: a.queried + b.queried, hit: a.hit + b.hit };
}
