/** Shared option parsing for the serve and launch commands. */
import { InvalidArgumentError } from 'commander';
import { intFlag } from '../../util/intFlag.js';

/** commander parser for an integer option within [min, max] (intFlag, as commander's argument error). */
export function parseIntOption(flag: string, min: number, max: number): (value: string) => number {
  return (value: string) => {
    try {
      return intFlag(flag, value, min, max);
    } catch (err) {
      throw new InvalidArgumentError((err as Error).message);
    }
  };
}

export { agentVersion } from '../../util/env.js';
