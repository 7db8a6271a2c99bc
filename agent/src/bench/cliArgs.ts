/** Provenance helpers shared by the afd-bench commands (integer flags: util/intFlag.ts). */
import { execFileSync } from 'node:child_process';
import { agentEnv } from '../util/env.js';

/** The short commit of the working tree, or $AFD_COMMIT (a GPU host has no git checkout). */
export function gitCommit(): string {
  // A GPU host runs a copy of the tree whose .git may be older than the tree: AFD_COMMIT wins.
  const commit = agentEnv().commit;
  if (commit) return commit;
  try {
    return execFileSync('git', ['rev-parse', '--short', 'HEAD'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  } catch {
    return 'unknown';
  }
}
