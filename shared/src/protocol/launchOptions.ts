/**
 * How every agent of a launch restarts its own ranks that die. Part of the launch spec
 * (launch.ts), so agents of one launch all apply the same policy.
 */
import { z } from 'zod';

/** What an agent does when one of its ranks exits without being asked to. */
export const restartPolicySchema = z.strictObject({
  /**
   * on-failure: restart the rank with exponential back-off (the block's other ranks wait
   * for it and reconnect); never: leave it failed (the launch reports failed). Default never
   * (the console restarts by hand); `afd-agent launch` sends on-failure unless told otherwise.
   */
  policy: z.enum(['on-failure', 'never']).default('never'),
  /**
   * Most restarts of one rank in a row: a rank that stays ready for a minute starts
   * counting from zero again. One more failure and the launch fails. Default 10.
   */
  maxRestarts: z.int().min(0).max(1000).default(10),
  /** Back-off before the first restart, ms; doubled for each further one. Default 1000. */
  backoffMs: z.int().min(0).max(600_000).default(1000),
  /** Longest back-off, ms. Default 30000. */
  maxBackoffMs: z.int().min(0).max(3_600_000).default(30_000),
});
export type RestartPolicy = z.output<typeof restartPolicySchema>;

/**
 * A change to the restart policy of a running launch (the Launch screen's switch): the
 * fields given replace the launch's, the rest (back-off included) stay. At least one.
 */
export const restartPolicyChangeShape = {
  /** on-failure or never, as in the launch spec. */
  policy: z.enum(['on-failure', 'never']).optional(),
  /** Most restarts of one rank in a row, as in the launch spec. */
  maxRestarts: z.int().min(0).max(1000).optional(),
};

/** Refuses a change that changes nothing. */
export function hasRestartChange(c: { policy?: unknown; maxRestarts?: unknown }): boolean {
  return c.policy !== undefined || c.maxRestarts !== undefined;
}
export const RESTART_CHANGE_EMPTY = 'give policy (on-failure or never), maxRestarts, or both';
