/**
 * Content addresses of full KV blocks (prefix caching). A block's KV depends on every token
 * before it, so its hash chains: H(parent block's hash, this block's token ids), and the
 * first block's parent is the root of its cache domain (the request's cache_salt, so
 * tenants with different salts never share a block). The model is fixed per engine, so it
 * needs no place in the key. SHA-256, truncated to 128 bits: collisions are not a practical
 * concern, and a few microseconds a block is noise next to computing its KV.
 */
import { createHash } from 'node:crypto';

/** The parent of a sequence's first block: its cache domain. */
export function rootHashOf(cacheSalt: string | undefined): string {
  return cacheSalt === undefined ? '' : `salt:${cacheSalt}`;
}

/** The hash of a full block of `tokens` whose predecessors hash to `parent`. */
export function hashBlock(parent: string, tokens: ArrayLike<number>): string {
  const ids = Int32Array.from(tokens);
  return createHash('sha256').update(parent).update(new Uint8Array(ids.buffer, ids.byteOffset, ids.byteLength)).digest('base64url').slice(0, 22);
}

/**
 * The block hashes of one growing token sequence, computed once each, on demand: entry i
 * covers tokens [i * blockSize, (i + 1) * blockSize).
 */
export class BlockHashChain {
  private readonly hashes: string[] = [];

  constructor(
    private readonly root: string,
    private readonly blockSize: number,
  ) {}

  /** The hashes of the first `numBlocks` blocks (all full); `tokensOf(start, count)` reads the sequence. Do not mutate. */
  upTo(numBlocks: number, tokensOf: (start: number, count: number) => ArrayLike<number>): readonly string[] {
    for (let i = this.hashes.length; i < numBlocks; i++) {
      this.hashes.push(hashBlock(i === 0 ? this.root : this.hashes[i - 1]!, tokensOf(i * this.blockSize, this.blockSize)));
    }
    return this.hashes;
  }
}
