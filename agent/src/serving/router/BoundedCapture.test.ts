import { describe, expect, it } from 'vitest';
import { BoundedCapture } from './BoundedCapture.js';

describe('BoundedCapture', () => {
  it('keeps a short body whole, strings and buffers alike', () => {
    const c = new BoundedCapture(8, 4);
    c.add('abc');
    c.add(Buffer.from('déf'));
    expect(c.text()).toBe('abcdéf');
    expect(c.complete).toBe(true);
    expect(c.totalBytes).toBe(7);
  });

  it('keeps the head and the tail of a long body, with the bytes left out', () => {
    const c = new BoundedCapture(5, 4);
    for (const chunk of ['01234', '56789', 'abcdef', 'ghij']) c.add(chunk);
    expect(c.complete).toBe(false);
    expect(c.text()).toBe('01234\n... [11 bytes not kept] ...\nghij');
    expect(c.totalBytes).toBe(20);
  });

  it('splits one large buffer between head and tail', () => {
    const c = new BoundedCapture(3, 3);
    c.add(Buffer.from('abcdefghij'));
    expect(c.text()).toBe('abc\n... [4 bytes not kept] ...\nhij');
  });

  it('keeps exactly head + tail without a note', () => {
    const c = new BoundedCapture(3, 3);
    c.add('abc');
    c.add('d');
    c.add('ef');
    expect(c.complete).toBe(true);
    expect(c.text()).toBe('abcdef');
  });
});

describe('BoundedCapture with many tiny chunks', () => {
  it('stays linear and keeps the right tail', () => {
    const c = new BoundedCapture(4, 1000);
    const t0 = performance.now();
    for (let i = 0; i < 200_000; i++) c.add(String(i % 10));
    expect(performance.now() - t0).toBeLessThan(2000);
    const text = c.text();
    expect(text.startsWith('0123\n... [')).toBe(true);
    expect(text.endsWith('56789')).toBe(true);
    expect(text.slice(text.lastIndexOf('\n') + 1)).toHaveLength(1000);
    expect(c.totalBytes).toBe(200_000);
  });
});
