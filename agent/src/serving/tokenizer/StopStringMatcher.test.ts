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

  it('include_stop_str_in_output: emits at once and ends right after the stop string, even one split across deltas', () => {
    const m = new StopStringMatcher(['STOP'], { includeInOutput: true });
    expect(m.push('hello S')).toEqual({ text: 'hello S', stopped: false });
    expect(m.push('TO')).toEqual({ text: 'TO', stopped: false });
    expect(m.push('P and more')).toEqual({ text: 'P', stopped: true });
    expect(new StopStringMatcher(['b'], { includeInOutput: true }).push('abc')).toEqual({ text: 'ab', stopped: true });
    expect(m.flush()).toBe('');
  });

  it('never matches in unchecked text (min_tokens), but a match that ends in checked text counts', () => {
    const m = new StopStringMatcher(['STOP']);
    expect(m.push('a STOP b', false)).toEqual({ text: 'a STOP b', stopped: false });
    expect(m.push(' c')).toEqual({ text: ' c', stopped: false });
    const n = new StopStringMatcher(['STOP']);
    expect(n.push('x ST', false)).toEqual({ text: 'x ', stopped: false });
    expect(n.push('OP y')).toEqual({ text: '', stopped: true });
  });
});
