import { describe, expect, it } from 'vitest';
import { BlockManager } from './BlockManager.js';

const caching = (numBlocks: number, blockSize = 4): BlockManager => new BlockManager(numBlocks, blockSize, { prefixCaching: true });

describe('BlockManager prefix caching', () => {
  it('finds the longest cached run of a sequence\'s block hashes, and nothing without caching', () => {
    const bm = caching(8);
    bm.allocate('a', 10); // blocks 0, 1, 2
    bm.cacheFullBlocks('a', ['h0', 'h1'], 2);
    expect(bm.numCachedBlocks).toBe(2);
    expect(bm.cachedPrefix(['h0', 'h1', 'h2'])).toEqual([0, 1]);
    expect(bm.cachedPrefix(['h0', 'hX', 'h1'])).toEqual([0]);
    expect(bm.cachedPrefix(['hX', 'h1'])).toEqual([]);
    expect(bm.cachedPrefix(['h0', 'h1'], 1)).toEqual([0]);
    const off = new BlockManager(8, 4);
    off.allocate('a', 10);
    off.cacheFullBlocks('a', ['h0', 'h1'], 2);
    expect(off.numCachedBlocks).toBe(0);
    expect(off.cachedPrefix(['h0'])).toEqual([]);
  });

  it('shares cached blocks in use, counting them once and writing only past them', () => {
    const bm = caching(8);
    bm.allocate('a', 10);
    bm.cacheFullBlocks('a', ['h0', 'h1'], 2);
    const hit = bm.cachedPrefix(['h0', 'h1']);
    expect(bm.canAllocate(12, { cachedBlocks: hit })).toBe(true);
    expect(bm.allocate('b', 12, { cachedBlocks: hit })).toEqual([0, 1, 3]);
    expect(bm.numUsedBlocks).toBe(4);
    expect(bm.numSharedBlocks).toBe(2);
    expect(bm.isWritableFrom('b', 8)).toBe(true);
    expect(bm.isWritableFrom('b', 7)).toBe(false);
  });

  it('keeps a freed block\'s content until the free queue hands it out again (LRU), then forgets it', () => {
    const bm = caching(4);
    bm.allocate('a', 12); // 0, 1, 2
    bm.cacheFullBlocks('a', ['h0', 'h1', 'h2'], 3);
    bm.free('a');
    expect(bm.numFreeBlocks).toBe(4);
    expect(bm.numCachedBlocks).toBe(3);
    // Free queue: the never-used 3, then a's blocks last first (2, 1, 0): its first block is evicted last.
    expect(bm.allocate('b', 4)).toEqual([3]);
    expect(bm.allocate('c', 4)).toEqual([2]);
    expect(bm.numCachedBlocks).toBe(2);
    expect(bm.cachedPrefix(['h0', 'h1', 'h2'])).toEqual([0, 1]);
  });

  it('a free cached block taken back counts against the free blocks', () => {
    const bm = caching(3);
    bm.allocate('a', 8); // 0, 1
    bm.cacheFullBlocks('a', ['h0', 'h1'], 2);
    bm.free('a');
    const hit = bm.cachedPrefix(['h0', 'h1']);
    // 3 free, of which the 2 cached ones come back: room for one new block only.
    expect(bm.canAllocate(12, { cachedBlocks: hit })).toBe(true);
    expect(bm.canAllocate(13, { cachedBlocks: hit })).toBe(false);
    expect(() => bm.allocate('b', 13, { cachedBlocks: hit })).toThrow(/needs 4 blocks, only 3 free/);
    expect(bm.allocate('b', 12, { cachedBlocks: hit })).toEqual([0, 1, 2]);
    expect(bm.numFreeBlocks).toBe(0);
    bm.free('b');
    expect(bm.numFreeBlocks).toBe(3);
  });

  it('refuses to reuse a block evicted since the lookup', () => {
    const bm = caching(2);
    bm.allocate('a', 4);
    bm.cacheFullBlocks('a', ['h0'], 1);
    bm.free('a');
    const hit = bm.cachedPrefix(['h0']);
    bm.allocate('x', 8); // takes both, evicting h0
    bm.free('x');
    expect(() => bm.allocate('b', 8, { cachedBlocks: hit })).toThrow(/cannot reuse block 0: it holds no cached prefix/);
  });

  it('keeps one block per content: a second block with the same tokens stays private', () => {
    const bm = caching(6);
    bm.allocate('a', 8);
    bm.allocate('b', 8);
    bm.cacheFullBlocks('a', ['h0', 'h1'], 2);
    bm.cacheFullBlocks('b', ['h0', 'h1'], 2);
    expect(bm.numCachedBlocks).toBe(2);
    expect(bm.cachedPrefix(['h0', 'h1'])).toEqual([0, 1]);
    // b's private blocks hold nothing findable: freed to the front, reused first.
    bm.free('b');
    expect(bm.allocate('c', 4)).toEqual([2]);
  });

  it('registers each block once, as its sequence grows', () => {
    const bm = caching(6);
    bm.allocate('a', 5);
    bm.cacheFullBlocks('a', ['h0'], 1);
    bm.append('a', 9);
    bm.cacheFullBlocks('a', ['h0', 'h1'], 2);
    expect(bm.cachedPrefix(['h0', 'h1'])).toEqual([0, 1]);
    expect(() => bm.cacheFullBlocks('a', ['h0', 'h1'], 3)).toThrow(/a has no hash for its block 2/);
  });

  it('reset forgets free cached blocks only', () => {
    const bm = caching(6);
    bm.allocate('a', 8);
    bm.cacheFullBlocks('a', ['h0', 'h1'], 2);
    bm.allocate('b', 4);
    bm.cacheFullBlocks('b', ['g0'], 1);
    bm.free('a');
    expect(bm.resetPrefixCache()).toBe(2);
    expect(bm.numCachedBlocks).toBe(1);
    expect(bm.cachedPrefix(['g0'])).toEqual([2]);
    expect(bm.cachedPrefix(['h0'])).toEqual([]);
  });
});
