/** Polling for tests: wait until a condition holds, or fail saying what did not happen and why. */

export interface UntilOptions {
  /** How often `cond` is asked again, ms (default 100). */
  pollMs?: number;
  /** More of the failure message (the state worth seeing when the wait timed out). */
  explain?: () => string | Promise<string>;
}

/**
 * Asks `cond` every `pollMs` until it holds; resolves with the ms that took. Throws
 * "timed out after <ms> ms waiting for <what>" (with `explain()`'s text) once `ms` passed.
 */
export async function until(cond: () => boolean | Promise<boolean>, what: string, ms = 20_000, opts: UntilOptions = {}): Promise<number> {
  const t0 = performance.now();
  while (!(await cond())) {
    if (performance.now() - t0 > ms) {
      const why = opts.explain ? `: ${await opts.explain()}` : '';
      throw new Error(`timed out after ${ms} ms waiting for ${what}${why}`);
    }
    await new Promise((r) => setTimeout(r, opts.pollMs ?? 100));
  }
  return performance.now() - t0;
}
