/**
 * Paged KV block manager: which KV-cache blocks each sequence owns. Pure data, no tensors
 * (the engine holds the cache; it only sees block ids through StepPlan.blockTables).
 *
 * Paired verbs (nano-vllm style): canAllocate / allocate / free for a sequence's first
 * blocks, canAppend / append when it grows. Free blocks are handed out in FIFO order, so
 * tests can assert exact block ids.
 *
 * Blocks are reference-counted: a sequence may start with blocks another one holds (the n
 * samples of one prompt sharing its KV: `{ fromSeqId, numBlocks }`) or blocks found by
 * their content (prefix caching: `{ cachedBlocks }`). A full block is never written again,
 * so sharing it is safe; a sequence only writes blocks it owns alone (`isWritableFrom`). A
 * block returns to the free queue when its last owner frees it, and usage counts every
 * physical block once.
 *
 * Prefix caching (`prefixCaching: true`): a full block whose KV is computed gets a content
 * hash (cacheFullBlocks; blockHash.ts); a new sequence looks up the longest run of its
 * blocks' hashes (cachedPrefix) and starts from there. A freed block keeps its hash and its
 * KV until the free queue hands it out again (LRU over free blocks; a block in use is never
 * evicted): freed blocks join the back, a sequence's last block first, and blocks holding
 * nothing reusable join the front.
 */
import { FreeBlockQueue } from './FreeBlockQueue.js';

/** Number of blocks needed to hold `numTokens` tokens. */
export function blocksForTokens(numTokens: number, kvBlockSize: number): number {
  return Math.ceil(numTokens / kvBlockSize);
}

/** The first blocks a new sequence takes over from another one (they stay that one's too). */
export interface SharedBlocks {
  /** The sequence that owns the blocks now. */
  fromSeqId: string;
  /** How many of its first blocks (all full) the new sequence shares. */
  numBlocks: number;
}

/** The first blocks a new sequence takes from the prefix cache (cachedPrefix's answer). */
export interface CachedBlocks {
  cachedBlocks: readonly number[];
}

/** Where a new sequence's first blocks come from, when not new. */
export type ReusedBlocks = SharedBlocks | CachedBlocks;

export interface BlockManagerOptions {
  /** Keep full blocks' KV findable by content after they are freed (default false). */
  prefixCaching?: boolean;
}

export class BlockManager {
  /** Blocks no sequence owns, in the order they are handed out (cached ones evicted then). */
  private readonly free_: FreeBlockQueue;
  /** Block table (ordered block ids) of every sequence that owns blocks. */
  private readonly tables = new Map<string, number[]>();
  /** Owners of each block: 0 = free, more than 1 = shared. */
  private readonly refCounts: Int32Array;
  /** Prefix caching: the content hash of each cached block (undefined = none). */
  private readonly hashOf: (string | undefined)[];
  /** Prefix caching: the block holding each hash. */
  private readonly byHash = new Map<string, number>();
  /** Prefix caching: how many of a sequence's first blocks cacheFullBlocks has seen. */
  private readonly numSeen = new Map<string, number>();
  readonly prefixCaching: boolean;

  constructor(
    /** Total KV blocks in the engine's cache. */
    readonly numBlocks: number,
    /** Tokens per KV block. */
    readonly kvBlockSize: number,
    options: BlockManagerOptions = {},
  ) {
    if (!Number.isInteger(numBlocks) || numBlocks < 1) throw new Error(`BlockManager: numBlocks must be a positive integer, got ${numBlocks}`);
    if (!Number.isInteger(kvBlockSize) || kvBlockSize < 1) throw new Error(`BlockManager: kvBlockSize must be a positive integer, got ${kvBlockSize}`);
    this.free_ = new FreeBlockQueue(numBlocks);
    this.refCounts = new Int32Array(numBlocks);
    this.hashOf = new Array<string | undefined>(numBlocks);
    this.prefixCaching = options.prefixCaching ?? false;
  }

  /** Blocks no sequence owns (cached ones included: they are reused when needed). */
  get numFreeBlocks(): number {
    return this.free_.size;
  }

  /** Blocks owned by at least one sequence (a shared block counts once). */
  get numUsedBlocks(): number {
    return this.numBlocks - this.free_.size;
  }

  /** Blocks owned by more than one sequence. */
  get numSharedBlocks(): number {
    return this.refCounts.reduce((n, c) => n + (c > 1 ? 1 : 0), 0);
  }

  /** Blocks whose KV is findable by content (in use or free). */
  get numCachedBlocks(): number {
    return this.byHash.size;
  }

  /** Fraction of blocks in use, 0..1. */
  get usage(): number {
    return this.numUsedBlocks / this.numBlocks;
  }

  /** The block table of a sequence (empty when it owns none). Do not mutate. */
  blockTable(seqId: string): readonly number[] {
    return this.tables.get(seqId) ?? [];
  }

  /** Tokens the sequence's blocks can hold. */
  capacityTokens(seqId: string): number {
    return this.blockTable(seqId).length * this.kvBlockSize;
  }

  /**
   * The cached blocks of the longest run of `hashes` (a sequence's full blocks, first
   * first) found in the cache, in order; empty without prefix caching. Changes nothing.
   */
  cachedPrefix(hashes: readonly string[], maxBlocks = hashes.length): number[] {
    const out: number[] = [];
    if (!this.prefixCaching) return out;
    for (let i = 0; i < Math.min(maxBlocks, hashes.length); i++) {
      const b = this.byHash.get(hashes[i]!);
      if (b === undefined) break;
      out.push(b);
    }
    return out;
  }

  /**
   * True when a new sequence can get blocks for its first `numTokens` tokens, the first of
   * them reused: `reused` blocks owned by another sequence (a count), or taken from the
   * cache (cachedBlocks; a free one among them is one free block fewer).
   */
  canAllocate(numTokens: number, reused: number | ReusedBlocks = 0): boolean {
    const prefix = typeof reused === 'number' ? reused : 'cachedBlocks' in reused ? reused.cachedBlocks.length : reused.numBlocks;
    const revived = typeof reused === 'object' && 'cachedBlocks' in reused ? reused.cachedBlocks.reduce((k, b) => k + (this.refCounts[b] === 0 ? 1 : 0), 0) : 0;
    return Math.max(0, blocksForTokens(numTokens, this.kvBlockSize) - prefix) + revived <= this.free_.size;
  }

  /**
   * Gives a sequence that owns nothing the blocks for its first `numTokens` tokens: the
   * first ones reused (another sequence's, or cached ones; shared, not copied), the rest new.
   */
  allocate(seqId: string, numTokens: number, reused?: ReusedBlocks): readonly number[] {
    if (this.tables.has(seqId)) throw new Error(`BlockManager.allocate: sequence ${seqId} already owns blocks; use append`);
    const prefix = reused ? this.reusedPrefix(seqId, reused) : [];
    const needed = Math.max(0, blocksForTokens(numTokens, this.kvBlockSize) - prefix.length);
    const revived = prefix.reduce((k, b) => k + (this.refCounts[b] === 0 ? 1 : 0), 0);
    if (needed + revived > this.free_.size) {
      throw new Error(`BlockManager.allocate: ${seqId} needs ${needed + revived} blocks, only ${this.free_.size} free; check canAllocate first`);
    }
    for (const b of prefix) {
      if (this.refCounts[b] === 0) this.free_.remove(b); // a cached free block comes back into use
      this.refCounts[b]! += 1;
    }
    const table = [...prefix, ...this.take(needed)];
    this.tables.set(seqId, table);
    if (this.prefixCaching) this.numSeen.set(seqId, 0);
    return table;
  }

  /** The blocks `seqId` would reuse, checked. */
  private reusedPrefix(seqId: string, reused: ReusedBlocks): readonly number[] {
    if ('cachedBlocks' in reused) {
      const stale = reused.cachedBlocks.find((b) => this.hashOf[b] === undefined);
      if (stale !== undefined) throw new Error(`BlockManager.allocate: ${seqId} cannot reuse block ${stale}: it holds no cached prefix (evicted since the lookup?)`);
      return reused.cachedBlocks;
    }
    const from = this.tables.get(reused.fromSeqId) ?? [];
    if (!Number.isInteger(reused.numBlocks) || reused.numBlocks < 0 || reused.numBlocks > from.length) {
      throw new Error(`BlockManager.allocate: ${seqId} cannot share ${reused.numBlocks} blocks of ${reused.fromSeqId}, which owns ${from.length}`);
    }
    return from.slice(0, reused.numBlocks);
  }

  /** Takes `count` blocks from the front of the free queue, each with one owner; a cached one is evicted. */
  private take(count: number): number[] {
    const ids = new Array<number>(count);
    for (let i = 0; i < count; i++) {
      const b = this.free_.popFront();
      this.evict(b);
      this.refCounts[b] = 1;
      ids[i] = b;
    }
    return ids;
  }

  /** Forgets the cached content of a block. */
  private evict(block: number): void {
    const h = this.hashOf[block];
    if (h === undefined) return;
    this.hashOf[block] = undefined;
    if (this.byHash.get(h) === block) this.byHash.delete(h);
  }

  /**
   * Prefix caching: the sequence's first `numFull` blocks are full and their KV computed;
   * `hashes` (at least numFull entries) are their content hashes. Each one not seen yet
   * becomes findable, unless another block already holds that content (then it stays
   * private). No-op without prefix caching.
   */
  cacheFullBlocks(seqId: string, hashes: readonly string[], numFull: number): void {
    if (!this.prefixCaching) return;
    const table = this.tables.get(seqId);
    if (!table) return;
    const end = Math.min(numFull, table.length);
    for (let i = this.numSeen.get(seqId) ?? 0; i < end; i++) {
      const b = table[i]!;
      const h = hashes[i];
      if (h === undefined) throw new Error(`BlockManager.cacheFullBlocks: ${seqId} has no hash for its block ${i}`);
      if (this.hashOf[b] !== undefined || this.byHash.has(h)) continue;
      this.hashOf[b] = h;
      this.byHash.set(h, b);
    }
    this.numSeen.set(seqId, Math.max(end, this.numSeen.get(seqId) ?? 0));
  }

  /** Forgets every cached block not in use (vLLM's reset_prefix_cache); returns how many. */
  resetPrefixCache(): number {
    let n = 0;
    for (const b of [...this.byHash.values()]) {
      if (this.refCounts[b] !== 0) continue;
      this.evict(b);
      n++;
    }
    return n;
  }

  /** Blocks a sequence must gain to hold `numTotalTokens` tokens in all. */
  private missingBlocks(seqId: string, numTotalTokens: number): number {
    return Math.max(0, blocksForTokens(numTotalTokens, this.kvBlockSize) - this.blockTable(seqId).length);
  }

  /** True when the sequence can grow to `numTotalTokens` tokens (cached + new). */
  canAppend(seqId: string, numTotalTokens: number): boolean {
    return this.missingBlocks(seqId, numTotalTokens) <= this.free_.size;
  }

  /** Grows the sequence's table so it holds `numTotalTokens` tokens; returns the table. */
  append(seqId: string, numTotalTokens: number): readonly number[] {
    const missing = this.missingBlocks(seqId, numTotalTokens);
    if (missing > this.free_.size) {
      throw new Error(`BlockManager.append: ${seqId} needs ${missing} more blocks, only ${this.free_.size} free; check canAppend first`);
    }
    let table = this.tables.get(seqId);
    if (!table) {
      table = [];
      this.tables.set(seqId, table);
      if (this.prefixCaching) this.numSeen.set(seqId, 0);
    }
    table.push(...this.take(missing));
    return table;
  }

  /** True when the sequence owns alone every block from the one holding token `fromToken` on (so it may write there). */
  isWritableFrom(seqId: string, fromToken: number): boolean {
    const table = this.blockTable(seqId);
    for (let i = Math.floor(fromToken / this.kvBlockSize); i < table.length; i++) if (this.refCounts[table[i]!] !== 1) return false;
    return true;
  }

  /**
   * Drops the sequence's claim on its blocks; a block is free once no sequence owns it
   * (no-op when it owns none). With prefix caching a freed cached block keeps its content
   * until evicted; the sequence's last blocks go first (the least likely to be shared).
   */
  free(seqId: string): void {
    const table = this.tables.get(seqId);
    if (!table) return;
    this.tables.delete(seqId);
    this.numSeen.delete(seqId);
    const order = this.prefixCaching ? [...table].reverse() : table;
    for (const b of order) {
      this.refCounts[b]! -= 1;
      if (this.refCounts[b] !== 0) continue;
      if (this.prefixCaching && this.hashOf[b] === undefined) this.free_.pushFront(b);
      else this.free_.pushBack(b);
    }
  }

  /** Sequences that currently own blocks (for leak checks). */
  owners(): string[] {
    return [...this.tables.keys()];
  }
}
