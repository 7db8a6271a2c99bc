import { describe, expect, it } from 'vitest';
import { BlockHashChain, hashBlock, rootHashOf } from './blockHash.js';

describe('block hashes', () => {
  it('depend on the tokens, their order and every block before', () => {
    const a = hashBlock('', [1, 2, 3, 4]);
    expect(hashBlock('', [1, 2, 3, 4])).toBe(a);
    expect(hashBlock('', [1, 2, 4, 3])).not.toBe(a);
    expect(hashBlock(a, [5, 6, 7, 8])).not.toBe(hashBlock('', [5, 6, 7, 8]));
    expect(a).toMatch(/^[\w-]{22}$/);
  });

  it('a salt opens another cache domain', () => {
    expect(rootHashOf(undefined)).toBe('');
    expect(hashBlock(rootHashOf('tenant-a'), [1, 2])).not.toBe(hashBlock(rootHashOf('tenant-b'), [1, 2]));
    expect(hashBlock(rootHashOf('tenant-a'), [1, 2])).not.toBe(hashBlock(rootHashOf(undefined), [1, 2]));
  });

  it('a chain computes each block once, on demand', () => {
    const tokens = Array.from({ length: 12 }, (_, i) => i * 7);
    let reads = 0;
    const read = (start: number, count: number): number[] => {
      reads++;
      return tokens.slice(start, start + count);
    };
    const chain = new BlockHashChain('', 4);
    const two = [...chain.upTo(2, read)];
    expect(reads).toBe(2);
    expect(two).toEqual([hashBlock('', tokens.slice(0, 4)), hashBlock(two[0]!, tokens.slice(4, 8))]);
    expect(chain.upTo(3, read).slice(0, 2)).toEqual(two);
    expect(reads).toBe(3);
    chain.upTo(1, read);
    expect(reads).toBe(3);
  });
});
