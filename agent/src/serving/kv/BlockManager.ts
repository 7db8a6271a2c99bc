/**
 * Paged KV block manager: which KV-cache blocks each sequence owns. Pure data, no tensors
 * (the engine holds the cache; it only sees block ids through StepPlan.blockTables).
 *
 * Paired verbs (nano-vllm style): canAllocate / allocate / free for a sequence's first
 * blocks, canAppend / append when it grows. Free blocks are handed out in FIFO order, so
 * tests can assert exact block ids.
 *
 * Blocks are reference-counted: a sequence may start with another sequence's first full
 * blocks (`allocate(..., { fromSeqId, numBlocks })`, the n samples of one prompt sharing
 * its KV). A full block is never written again, so sharing it is safe; a sequence only
 * writes blocks it owns alone (`isWritableFrom`). A block returns to the free list when
 * its last owner frees it, and usage counts every physical block once.
 */

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

export class BlockManager {
  /** Block ids not owned by any sequence, handed out from the front. */
  private readonly freeIds: number[];
  /** Block table (ordered block ids) of every sequence that owns blocks. */
  private readonly tables = new Map<string, number[]>();
  /** Owners of each block: 0 = free, more than 1 = shared. */
  private readonly refCounts: Int32Array;

  constructor(
    /** Total KV blocks in the engine's cache. */
    readonly numBlocks: number,
    /** Tokens per KV block. */
    readonly kvBlockSize: number,
  ) {
    if (!Number.isInteger(numBlocks) || numBlocks < 1) throw new Error(`BlockManager: numBlocks must be a positive integer, got ${numBlocks}`);
    if (!Number.isInteger(kvBlockSize) || kvBlockSize < 1) throw new Error(`BlockManager: kvBlockSize must be a positive integer, got ${kvBlockSize}`);
    this.freeIds = Array.from({ length: numBlocks }, (_, i) => i);
    this.refCounts = new Int32Array(numBlocks);
  }

  get numFreeBlocks(): number {
    return this.freeIds.length;
  }

  /** Blocks owned by at least one sequence (a shared block counts once). */
  get numUsedBlocks(): number {
    return this.numBlocks - this.freeIds.length;
  }

  /** Blocks owned by more than one sequence. */
  get numSharedBlocks(): number {
    return this.refCounts.reduce((n, c) => n + (c > 1 ? 1 : 0), 0);
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

  /** True when a new sequence can get blocks for its first `numTokens` tokens, of which the first `numSharedBlocks` blocks are shared. */
  canAllocate(numTokens: number, numSharedBlocks = 0): boolean {
    return blocksForTokens(numTokens, this.kvBlockSize) - numSharedBlocks <= this.freeIds.length;
  }

  /**
   * Gives a sequence that owns nothing the blocks for its first `numTokens` tokens: the
   * first `shared.numBlocks` are another sequence's (shared, not copied), the rest new.
   */
  allocate(seqId: string, numTokens: number, shared?: SharedBlocks): readonly number[] {
    if (this.tables.has(seqId)) throw new Error(`BlockManager.allocate: sequence ${seqId} already owns blocks; use append`);
    const prefix = shared ? this.sharedPrefix(seqId, shared) : [];
    const needed = Math.max(0, blocksForTokens(numTokens, this.kvBlockSize) - prefix.length);
    if (needed > this.freeIds.length) {
      throw new Error(`BlockManager.allocate: ${seqId} needs ${needed} blocks, only ${this.freeIds.length} free; check canAllocate first`);
    }
    const table = [...prefix, ...this.take(needed)];
    for (const b of prefix) this.refCounts[b]! += 1;
    this.tables.set(seqId, table);
    return table;
  }

  /** The blocks `seqId` would share, checked. */
  private sharedPrefix(seqId: string, shared: SharedBlocks): number[] {
    const from = this.tables.get(shared.fromSeqId) ?? [];
    if (!Number.isInteger(shared.numBlocks) || shared.numBlocks < 0 || shared.numBlocks > from.length) {
      throw new Error(`BlockManager.allocate: ${seqId} cannot share ${shared.numBlocks} blocks of ${shared.fromSeqId}, which owns ${from.length}`);
    }
    return from.slice(0, shared.numBlocks);
  }

  /** Takes `count` blocks from the front of the free list, each with one owner. */
  private take(count: number): number[] {
    const ids = this.freeIds.splice(0, count);
    for (const b of ids) this.refCounts[b] = 1;
    return ids;
  }

  /** Blocks a sequence must gain to hold `numTotalTokens` tokens in all. */
  private missingBlocks(seqId: string, numTotalTokens: number): number {
    return Math.max(0, blocksForTokens(numTotalTokens, this.kvBlockSize) - this.blockTable(seqId).length);
  }

  /** True when the sequence can grow to `numTotalTokens` tokens (cached + new). */
  canAppend(seqId: string, numTotalTokens: number): boolean {
    return this.missingBlocks(seqId, numTotalTokens) <= this.freeIds.length;
  }

  /** Grows the sequence's table so it holds `numTotalTokens` tokens; returns the table. */
  append(seqId: string, numTotalTokens: number): readonly number[] {
    const missing = this.missingBlocks(seqId, numTotalTokens);
    if (missing > this.freeIds.length) {
      throw new Error(`BlockManager.append: ${seqId} needs ${missing} more blocks, only ${this.freeIds.length} free; check canAppend first`);
    }
    let table = this.tables.get(seqId);
    if (!table) {
      table = [];
      this.tables.set(seqId, table);
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

  /** Drops the sequence's claim on its blocks; a block is free once no sequence owns it (no-op when it owns none). */
  free(seqId: string): void {
    const table = this.tables.get(seqId);
    if (!table) return;
    this.tables.delete(seqId);
    for (const b of table) {
      this.refCounts[b]! -= 1;
      if (this.refCounts[b] === 0) this.freeIds.push(b);
    }
  }

  /** Sequences that currently own blocks (for leak checks). */
  owners(): string[] {
    return [...this.tables.keys()];
  }
}
