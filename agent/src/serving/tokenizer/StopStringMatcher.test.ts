import { describe, expect, it } from 'vitest';
import { StopStringMatcher } from './StopStringMatcher.js';

describe('StopStringMatcher', () => {
  it('passes text through when there are no stop strings', () => {
    const m = new StopStringMatcher([]);
    expect(m.push('abc')).toEqual({ text: 'abc', stopped: false });
  });

  it('stops before a stop string split across deltas and never leaks its prefix', () => {
    const m = new StopStringMatcher(['STOP']);
    expect(m.push('hello S')).toEqual({ text: 'hello ', stopped: false });
    expect(m.push('T')).toEqual({ text: '', stopped: false });
    expect(m.push('OP and more')).toEqual({ text: '', stopped: true });
  });

  it('releases held text when the prefix turns out not to match', () => {
    const m = new StopStringMatcher(['STOP', '\n\n']);
    expect(m.push('a ST')).toEqual({ text: 'a ', stopped: false });
    expect(m.push('AR')).toEqual({ text: 'STAR', stopped: false });
    expect(m.push('x\n')).toEqual({ text: 'x', stopped: false });
    expect(m.flush()).toBe('\n');
  });

  it('cuts at the earliest of several stop strings', () => {
    const m = new StopStringMatcher(['world', 'lo']);
    expect(m.push('hello world')).toEqual({ text: 'hel', stopped: true });
  });
});
