import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { fieldIssues, formatIssues, formatPath, parseWith } from './issues.js';
import { utf8ByteLength } from '../protocol/wire.js';

describe('field issues', () => {
  it('formats paths with dots and indexes', () => {
    expect(formatPath([])).toBe('');
    expect(formatPath(['a'])).toBe('a');
    expect(formatPath(['a', 'b', 2, 'c'])).toBe('a.b[2].c');
    expect(formatPath([0, 'x'])).toBe('[0].x');
  });

  it('splits unknown keys into one issue each and formats a list', () => {
    const schema = z.strictObject({ a: z.number(), nested: z.strictObject({ b: z.string() }) });
    const r = schema.safeParse({ a: 'x', nested: { b: 'y', c: 1, d: 2 } });
    expect(r.success).toBe(false);
    const issues = fieldIssues(r.error!);
    expect(issues.map((i) => i.path)).toEqual(['a', 'nested.c', 'nested.d']);
    expect(formatIssues(issues)).toMatch(/^a: .*; nested.c: unknown key.*; nested.d: unknown key/);
    expect(formatIssues([{ path: '', message: 'whole value' }])).toBe('whole value');
  });

  it('parseWith returns the value or the issues', () => {
    expect(parseWith(z.number().int(), 3)).toEqual({ ok: true, value: 3 });
    expect(parseWith(z.number().int(), 'x')).toEqual({ ok: false, issues: [{ path: '', message: expect.any(String) }] });
  });
});

describe('utf8ByteLength', () => {
  it('counts UTF-8 bytes like an encoder (lone surrogates become 3-byte U+FFFD)', () => {
    const cases: [string, number][] = [['', 0], ['abc', 3], ['é', 2], ['€', 3], ['😀', 4], ['a😀é€\u0000', 11], ['\ud800', 3], ['\ud800a', 4], ['\udc00', 3]];
    for (const [s, bytes] of cases) expect(utf8ByteLength(s), JSON.stringify(s)).toBe(bytes);
  });
});
