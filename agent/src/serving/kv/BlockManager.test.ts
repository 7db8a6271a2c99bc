import { describe, expect, it } from 'vitest';
import { BlockManager, blocksForTokens } from './BlockManager.js';

describe('BlockManager', () => {
  it('counts blocks for tokens', () => {
    expect(blocksForTokens(0, 4)).toBe(0);
    expect(blocksForTokens(1, 4)).toBe(1);
    expect(blocksForTokens(4, 4)).toBe(1);
    expect(blocksForTokens(5, 4)).toBe(2);
  });

  it('allocates exact block ids in FIFO order and frees them to the back', () => {
    const bm = new BlockManager(8, 4);
    expect(bm.canAllocate(9)).toBe(true);
    expect(bm.allocate('a', 9)).toEqual([0, 1, 2]);
    expect(bm.allocate('b', 4)).toEqual([3]);
    expect(bm.numFreeBlocks).toBe(4);
    expect(bm.usage).toBeCloseTo(0.5);
    bm.free('a');
    expect(bm.numFreeBlocks).toBe(7);
    // Free list is now [4,5,6,7,0,1,2].
    expect(bm.allocate('c', 20)).toEqual([4, 5, 6, 7, 0]);
    expect(bm.blockTable('c')).toEqual([4, 5, 6, 7, 0]);
    expect(bm.owners().sort()).toEqual(['b', 'c']);
  });

  it('appends only when a token crosses a block boundary', () => {
    const bm = new BlockManager(4, 4);
    bm.allocate('a', 3);
    expect(bm.blockTable('a')).toEqual([0]);
    expect(bm.append('a', 4)).toEqual([0]);
    expect(bm.append('a', 5)).toEqual([0, 1]);
    expect(bm.capacityTokens('a')).toBe(8);
    expect(bm.append('a', 16)).toEqual([0, 1, 2, 3]);
    expect(bm.canAppend('a', 17)).toBe(false);
    expect(bm.canAppend('a', 16)).toBe(true);
    expect(() => bm.append('a', 17)).toThrow(/needs 1 more blocks, only 0 free/);
  });

  it('refuses to over-allocate and to allocate twice', () => {
    const bm = new BlockManager(2, 16);
    expect(bm.canAllocate(33)).toBe(false);
    expect(() => bm.allocate('a', 33)).toThrow(/needs 3 blocks, only 2 free/);
    bm.allocate('a', 1);
    expect(() => bm.allocate('a', 1)).toThrow(/already owns blocks/);
  });

  it('append on a sequence without blocks allocates from scratch; free is idempotent', () => {
    const bm = new BlockManager(3, 2);
    expect(bm.append('x', 3)).toEqual([0, 1]);
    bm.free('x');
    bm.free('x');
    expect(bm.numFreeBlocks).toBe(3);
    expect(bm.owners()).toEqual([]);
  });

  it('validates its sizes', () => {
    expect(() => new BlockManager(0, 16)).toThrow(/numBlocks/);
    expect(() => new BlockManager(4, 0)).toThrow(/kvBlockSize/);
  });
});
