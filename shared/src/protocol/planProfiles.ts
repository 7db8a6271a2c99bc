/**
 * `plan.profiles`: the planner's cost profiles an agent has on its host, for the console's
 * Plan screen: every `$AFD_HOME/profiles/*.json` and the repository's CPU profile
 * (docs/planner/profile-cpu-qwen3_moe-tiny.json) where the agent runs from a checkout.
 * Each comes as its JSON text; the console parses it (`parseCostProfile`) and says why one
 * is refused. Files too big or unreadable are listed as skipped, with the reason.
 */
import { z } from 'zod';

/** Largest profile file sent (a profile is a few KiB; 1 MiB keeps a reply well under a frame). */
export const PLAN_PROFILE_MAX_BYTES = 1024 * 1024;
/** Most profile files listed. */
export const PLAN_PROFILE_MAX_FILES = 32;

export const planProfileFileSchema = z.object({
  /** File name, e.g. "h100.json". */
  name: z.string().min(1),
  /** Absolute path on the agent host. */
  path: z.string().min(1),
  /** Where it was found: the agent's home, or the repository's docs. */
  origin: z.enum(['home', 'repo']),
  /** The file's text (JSON, not parsed by the agent). */
  text: z.string().max(PLAN_PROFILE_MAX_BYTES),
});
export type PlanProfileFile = z.infer<typeof planProfileFileSchema>;

export const planProfilesResultSchema = z.object({
  profiles: z.array(planProfileFileSchema).max(PLAN_PROFILE_MAX_FILES),
  /** Files found but not sent, and why. */
  skipped: z.array(z.object({ path: z.string(), reason: z.string() })),
});
export type PlanProfilesResult = z.infer<typeof planProfilesResultSchema>;
