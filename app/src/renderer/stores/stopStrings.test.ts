import { describe, expect, it } from 'vitest';
import { parseStopText, stopText } from './stopStrings.js';

describe('stop strings as typed', () => {
  it('one a line, escapes for newline, tab and backslash, empty lines dropped', () => {
    expect(parseStopText('END\n\n\\n\\n\nA\\tB\nC:\\\\x')).toEqual(['END', '\n\n', 'A\tB', 'C:\\x']);
    expect(parseStopText('')).toEqual([]);
    expect(parseStopText('\\q')).toEqual(['\\q']);
  });

  it('stopText types a list back', () => {
    const list = ['END', '\n\n', 'A\tB', 'C:\\x', 'x\\n'];
    expect(stopText(list)).toBe('END\n\\n\\n\nA\\tB\nC:\\\\x\nx\\\\n');
    expect(parseStopText(stopText(list))).toEqual(list);
  });
});
