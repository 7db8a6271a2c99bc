/** Argument parsing and provenance helpers shared by the afd-bench commands. */
import { execFileSync } from 'node:child_process';

/** A flag value that must be an integer >= 0; throws naming the flag and the value. */
export function nonNegativeInt(flag: string, v: string): number {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0) throw new Error(`${flag} must be a non-negative integer, got "${v}"`);
  return n;
}

/** A flag value that must be an integer >= 1. */
export function positiveInt(flag: string, v: string): number {
  const n = nonNegativeInt(flag, v);
  if (n === 0) throw new Error(`${flag} must be positive, got "${v}"`);
  return n;
}

/** The short commit of the working tree, or $AFD_COMMIT (a GPU host has no git checkout). */
export function gitCommit(): string {
  try {
    return execFileSync('git', ['rev-parse', '--short', 'HEAD'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  } catch {
    return process.env['AFD_COMMIT'] ?? 'unknown';
  }
}
