/** The one parser of integer command-line values (agent CLI, role processes, afd-bench). */

/**
 * A flag's value as an integer within [min, max] (decimal digits, optional minus sign);
 * throws naming the flag, the allowed range and the value given.
 */
export function intFlag(flag: string, value: string, min: number, max = Number.MAX_SAFE_INTEGER): number {
  const n = Number(value);
  if (!/^-?\d+$/.test(value.trim()) || !Number.isSafeInteger(n) || n < min || n > max) {
    const range = max === Number.MAX_SAFE_INTEGER ? `>= ${min}` : `from ${min} to ${max}`;
    throw new Error(`${flag} must be an integer ${range}, got ${JSON.stringify(value)}`);
  }
  return n;
}
