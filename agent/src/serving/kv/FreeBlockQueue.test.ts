import { describe, expect, it } from 'vitest';
import { FreeBlockQueue } from './FreeBlockQueue.js';

describe('FreeBlockQueue', () => {
  it('starts with every block in id order and hands them out from the front', () => {
    const q = new FreeBlockQueue(4);
    expect(q.toArray()).toEqual([0, 1, 2, 3]);
    expect(q.popFront()).toBe(0);
    expect(q.popFront()).toBe(1);
    expect(q.size).toBe(2);
    expect(q.has(0)).toBe(false);
    expect(q.has(2)).toBe(true);
  });

  it('joins at either end and leaves from the middle in O(1)', () => {
    const q = new FreeBlockQueue(5);
    for (let i = 0; i < 5; i++) q.popFront();
    q.pushBack(3);
    q.pushBack(1);
    q.pushFront(4);
    q.pushBack(0);
    expect(q.toArray()).toEqual([4, 3, 1, 0]);
    q.remove(1);
    expect(q.toArray()).toEqual([4, 3, 0]);
    q.remove(4);
    q.remove(0);
    expect(q.toArray()).toEqual([3]);
    q.remove(3);
    expect(q.size).toBe(0);
    expect(q.toArray()).toEqual([]);
    q.pushFront(2);
    expect(q.toArray()).toEqual([2]);
  });

  it('refuses a block twice, a missing block, and a pop when empty', () => {
    const q = new FreeBlockQueue(2);
    expect(() => q.pushBack(1)).toThrow(/block 1 is already free/);
    q.remove(1);
    expect(() => q.remove(1)).toThrow(/block 1 is not free/);
    q.popFront();
    expect(() => q.popFront()).toThrow(/no free block/);
  });
});
