/**
 * `plan.profiles`: the cost profiles on this host for the console's Plan screen, sent as
 * text (the console parses them): every `<home>/profiles/*.json` ($AFD_HOME, else ~/.afd),
 * then the repository's profiles (docs/planner/profile-*.json: the CPU one, found above the
 * running script, the module or the working directory where the agent runs from a checkout,
 * and the measured ones beside it, e.g. an H100's). A file too big or unreadable is listed as skipped with the reason.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { PLAN_PROFILE_MAX_BYTES, PLAN_PROFILE_MAX_FILES, type PlanProfileFile, type PlanProfilesResult } from '@afd/shared';
import { afdHome } from '../util/afdHome.js';
import { searchStarts } from '../util/searchStarts.js';

/** The repository's profile, relative to the checkout's root. */
export const REPO_PROFILE = join('docs', 'planner', 'profile-cpu-qwen3_moe-tiny.json');

/** The repository's CPU profile above any start folder (up to 5 levels), or null. */
export function findRepoProfile(starts: readonly string[] = searchStarts()): string | null {
  for (const start of starts) {
    let dir = start;
    for (let up = 0; up < 6; up++) {
      const p = join(dir, REPO_PROFILE);
      if (existsSync(p)) return p;
      const parent = dirname(dir);
      if (parent === dir) break;
      dir = parent;
    }
  }
  return null;
}

export function listPlanProfiles(opts: { home?: string; repoProfile?: string | null } = {}): PlanProfilesResult {
  const home = opts.home ?? afdHome();
  const dir = join(home, 'profiles');
  const candidates: { path: string; origin: PlanProfileFile['origin'] }[] = [];
  if (existsSync(dir)) {
    for (const name of readdirSync(dir).filter((n) => n.endsWith('.json')).sort()) candidates.push({ path: join(dir, name), origin: 'home' });
  }
  const repo = opts.repoProfile === undefined ? findRepoProfile() : opts.repoProfile;
  if (repo) {
    const folder = dirname(repo);
    const beside = (existsSync(folder) ? readdirSync(folder) : []).filter((n) => n.startsWith('profile-') && n.endsWith('.json'));
    for (const name of [...new Set([repo.slice(folder.length + 1), ...beside])].sort()) candidates.push({ path: join(folder, name), origin: 'repo' });
  }
  const profiles: PlanProfileFile[] = [];
  const skipped: PlanProfilesResult['skipped'] = [];
  for (const c of candidates) {
    if (profiles.length >= PLAN_PROFILE_MAX_FILES) {
      skipped.push({ path: c.path, reason: `more than ${PLAN_PROFILE_MAX_FILES} profiles: not sent` });
      continue;
    }
    try {
      const st = statSync(c.path);
      if (!st.isFile()) throw new Error('not a file');
      if (st.size > PLAN_PROFILE_MAX_BYTES) throw new Error(`${st.size} bytes, over the ${PLAN_PROFILE_MAX_BYTES} a profile may have`);
      profiles.push({ name: c.path.slice(c.path.lastIndexOf('/') + 1), path: c.path, origin: c.origin, text: readFileSync(c.path, 'utf8') });
    } catch (e) {
      skipped.push({ path: c.path, reason: e instanceof Error ? e.message : String(e) });
    }
  }
  return { profiles, skipped };
}
