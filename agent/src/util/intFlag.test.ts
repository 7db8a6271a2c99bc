import { describe, expect, it } from 'vitest';
import { intFlag } from './intFlag.js';

describe('intFlag', () => {
  it('reads decimal integers within the range', () => {
    expect(intFlag('--n', '0', 0)).toBe(0);
    expect(intFlag('--n', ' 42 ', 1, 100)).toBe(42);
    expect(intFlag('--n', '-3', -5)).toBe(-3);
  });

  it('names the flag, the range and the value when it refuses one', () => {
    expect(() => intFlag('--threads', 'abc', 1)).toThrow('--threads must be an integer >= 1, got "abc"');
    expect(() => intFlag('--port', '70000', 0, 65535)).toThrow('--port must be an integer from 0 to 65535, got "70000"');
    for (const v of ['', '1.5', '1e3', '0x10', '9007199254740993']) expect(() => intFlag('--n', v, 0), v).toThrow(/--n must be an integer/);
  });
});
