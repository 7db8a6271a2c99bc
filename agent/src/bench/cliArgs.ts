/** Provenance helpers shared by the afd-bench commands (integer flags: util/intFlag.ts). */
import { execFileSync } from 'node:child_process';

/** The short commit of the working tree, or $AFD_COMMIT (a GPU host has no git checkout). */
export function gitCommit(): string {
  try {
    return execFileSync('git', ['rev-parse', '--short', 'HEAD'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  } catch {
    return process.env['AFD_COMMIT'] ?? 'unknown';
  }
}
