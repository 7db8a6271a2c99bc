/** Shared option parsing for the serve and launch commands. */
import { InvalidArgumentError } from 'commander';

/** commander parser for an integer option within [min, max]. */
export function parseIntOption(flag: string, min: number, max: number): (value: string) => number {
  return (value: string) => {
    const n = Number(value);
    if (!/^-?\d+$/.test(value.trim()) || !Number.isSafeInteger(n) || n < min || n > max) {
      throw new InvalidArgumentError(`${flag} must be an integer from ${min} to ${max} (got "${value}")`);
    }
    return n;
  };
}

/** The agent's version (AFD_VERSION overrides, as in main.ts). */
export function agentVersion(): string {
  return process.env['AFD_VERSION'] ?? '0.1.0';
}
