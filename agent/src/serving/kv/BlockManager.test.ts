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

  it('shares a sequence\'s first blocks, counts each block once, and frees it with its last owner', () => {
    const bm = new BlockManager(8, 4);
    expect(bm.allocate('lead', 10)).toEqual([0, 1, 2]);
    // Two followers share the two full blocks and get one new block each for their tails.
    expect(bm.canAllocate(10, 2)).toBe(true);
    expect(bm.allocate('f1', 10, { fromSeqId: 'lead', numBlocks: 2 })).toEqual([0, 1, 3]);
    expect(bm.allocate('f2', 9, { fromSeqId: 'f1', numBlocks: 2 })).toEqual([0, 1, 4]);
    expect(bm.numUsedBlocks).toBe(5);
    expect(bm.numSharedBlocks).toBe(2);
    expect(bm.usage).toBeCloseTo(5 / 8);
    // A sequence writes only where it owns every block alone.
    expect(bm.isWritableFrom('f1', 8)).toBe(true);
    expect(bm.isWritableFrom('f1', 7)).toBe(false);
    expect(bm.isWritableFrom('lead', 8)).toBe(true);
    // The leader leaves first: only its own block is freed; the shared ones stay.
    bm.free('lead');
    expect(bm.numFreeBlocks).toBe(4);
    expect(bm.blockTable('f2')).toEqual([0, 1, 4]);
    expect(bm.numSharedBlocks).toBe(2);
    bm.free('f2');
    expect(bm.numSharedBlocks).toBe(0);
    expect(bm.isWritableFrom('f1', 0)).toBe(true);
    expect(bm.numUsedBlocks).toBe(3);
    bm.free('f1');
    // Free list order: the leader's block 2, f2's block 4, then f1's 0, 1, 3.
    expect(bm.allocate('x', 32)).toEqual([5, 6, 7, 2, 4, 0, 1, 3]);
    bm.free('x');
    expect(bm.owners()).toEqual([]);
    expect(bm.numFreeBlocks).toBe(8);
  });

  it('a shared prefix needs no free blocks; refuses to share blocks the donor does not own', () => {
    const bm = new BlockManager(3, 4);
    bm.allocate('a', 12);
    expect(bm.canAllocate(8, 2)).toBe(true);
    expect(bm.canAllocate(9, 2)).toBe(false);
    expect(bm.allocate('b', 8, { fromSeqId: 'a', numBlocks: 2 })).toEqual([0, 1]);
    expect(bm.numUsedBlocks).toBe(3);
    expect(() => bm.allocate('c', 20, { fromSeqId: 'a', numBlocks: 4 })).toThrow(/cannot share 4 blocks of a, which owns 3/);
    expect(() => bm.allocate('c', 4, { fromSeqId: 'gone', numBlocks: 1 })).toThrow(/cannot share 1 blocks of gone, which owns 0/);
    expect(() => bm.allocate('c', 13, { fromSeqId: 'a', numBlocks: 3 })).toThrow(/needs 1 blocks, only 0 free/);
    expect(bm.owners().sort()).toEqual(['a', 'b']);
    // Growing a sharer appends a block of its own.
    bm.free('a');
    expect(bm.append('b', 9)).toEqual([0, 1, 2]);
    bm.free('b');
    expect(bm.numFreeBlocks).toBe(3);
  });

  it('validates its sizes', () => {
    expect(() => new BlockManager(0, 16)).toThrow(/numBlocks/);
    expect(() => new BlockManager(4, 0)).toThrow(/kvBlockSize/);
  });
});
