import { describe, expect, it } from 'vitest';
import { LogRing } from './LogRing.js';

describe('LogRing', () => {
  it('keeps the newest maxLines lines with increasing sequence numbers', () => {
    const ring = new LogRing({ maxLines: 3 });
    for (let i = 1; i <= 10; i++) ring.push('stdout', `line ${i}`);
    expect(ring.size).toBe(3);
    expect(ring.since().map((l) => l.text)).toEqual(['line 8', 'line 9', 'line 10']);
    expect(ring.since().map((l) => l.seq)).toEqual([8, 9, 10]);
  });

  it('drops the oldest lines when the byte bound is exceeded, keeping at least one', () => {
    const ring = new LogRing({ maxLines: 100, maxBytes: 10 });
    ring.push('stderr', 'aaaa');
    ring.push('stderr', 'bbbb');
    ring.push('stderr', 'cccc');
    expect(ring.since().map((l) => l.text)).toEqual(['bbbb', 'cccc']);
    ring.push('stderr', 'x'.repeat(50));
    expect(ring.size).toBe(1);
  });

  it('truncates over-long lines', () => {
    const ring = new LogRing({ maxLineBytes: 5 });
    expect(ring.push('stdout', '0123456789').text).toBe('01234…');
  });

  it('answers since(seq) and tail(n) without repeats', () => {
    const ring = new LogRing({ maxLines: 1000 });
    for (let i = 1; i <= 50; i++) ring.push('stdout', String(i));
    expect(ring.since(45).map((l) => l.text)).toEqual(['46', '47', '48', '49', '50']);
    expect(ring.since(0, 2).map((l) => l.text)).toEqual(['49', '50']);
    expect(ring.tail(3)).toEqual(['48', '49', '50']);
  });

  it('stays bounded over many pushes (compaction)', () => {
    const ring = new LogRing({ maxLines: 10 });
    for (let i = 0; i < 10_000; i++) ring.push('stdout', `l${i}`);
    expect(ring.size).toBe(10);
    expect(ring.since()[0]?.text).toBe('l9990');
  });

  it('rejects non-positive bounds', () => {
    expect(() => new LogRing({ maxLines: 0 })).toThrow(/positive/);
  });
});
