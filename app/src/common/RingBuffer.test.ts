import { describe, expect, it } from 'vitest';
import { RingBuffer } from './RingBuffer.js';

describe('RingBuffer', () => {
  it('keeps items in order until full', () => {
    const r = new RingBuffer<number>(3);
    r.push(1);
    r.push(2);
    expect(r.toArray()).toEqual([1, 2]);
    expect(r.size).toBe(2);
    expect(r.last()).toBe(2);
  });

  it('drops the oldest past capacity and counts drops', () => {
    const r = new RingBuffer<number>(3);
    r.pushAll([1, 2, 3, 4, 5]);
    expect(r.toArray()).toEqual([3, 4, 5]);
    expect(r.at(0)).toBe(3);
    expect(r.at(3)).toBeUndefined();
    expect(r.dropped).toBe(2);
    expect(r.totalPushed).toBe(5);
  });

  it('tail returns the newest n oldest-first', () => {
    const r = new RingBuffer<number>(4);
    r.pushAll([1, 2, 3, 4, 5, 6]);
    expect(r.tail(2)).toEqual([5, 6]);
    expect(r.tail(10)).toEqual([3, 4, 5, 6]);
  });

  it('stays bounded under a long stream', () => {
    const r = new RingBuffer<number>(100);
    for (let i = 0; i < 100_000; i++) r.push(i);
    expect(r.size).toBe(100);
    expect(r.at(0)).toBe(99_900);
    r.clear();
    expect(r.size).toBe(0);
    expect(r.dropped).toBe(0);
    expect(r.toArray()).toEqual([]);
  });

  it('rejects a bad capacity', () => {
    expect(() => new RingBuffer(0)).toThrow(/positive integer/);
  });
});
