/**
 * Paged KV block manager: which KV-cache blocks each sequence owns. Pure data, no tensors
 * (the engine holds the cache; it only sees block ids through StepPlan.blockTables).
 *
 * Paired verbs (nano-vllm style): canAllocate / allocate / free for a sequence's first
 * blocks, canAppend / append when it grows. Free blocks are handed out in FIFO order, so
 * tests can assert exact block ids.
 */

/** Number of blocks needed to hold `numTokens` tokens. */
export function blocksForTokens(numTokens: number, kvBlockSize: number): number {
  return Math.ceil(numTokens / kvBlockSize);
}

export class BlockManager {
  /** Block ids not owned by any sequence, handed out from the front. */
  private readonly freeIds: number[];
  /** Block table (ordered block ids) of every sequence that owns blocks. */
  private readonly tables = new Map<string, number[]>();

  constructor(
    /** Total KV blocks in the engine's cache. */
    readonly numBlocks: number,
    /** Tokens per KV block. */
    readonly kvBlockSize: number,
  ) {
    if (!Number.isInteger(numBlocks) || numBlocks < 1) throw new Error(`BlockManager: numBlocks must be a positive integer, got ${numBlocks}`);
    if (!Number.isInteger(kvBlockSize) || kvBlockSize < 1) throw new Error(`BlockManager: kvBlockSize must be a positive integer, got ${kvBlockSize}`);
    this.freeIds = Array.from({ length: numBlocks }, (_, i) => i);
  }

  get numFreeBlocks(): number {
    return this.freeIds.length;
  }

  get numUsedBlocks(): number {
    return this.numBlocks - this.freeIds.length;
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

  /** True when a new sequence can get blocks for its first `numTokens` tokens. */
  canAllocate(numTokens: number): boolean {
    return blocksForTokens(numTokens, this.kvBlockSize) <= this.freeIds.length;
  }

  /** Gives a sequence that owns nothing the blocks for its first `numTokens` tokens. */
  allocate(seqId: string, numTokens: number): readonly number[] {
    if (this.tables.has(seqId)) throw new Error(`BlockManager.allocate: sequence ${seqId} already owns blocks; use append`);
    const needed = blocksForTokens(numTokens, this.kvBlockSize);
    if (needed > this.freeIds.length) {
      throw new Error(`BlockManager.allocate: ${seqId} needs ${needed} blocks, only ${this.freeIds.length} free; check canAllocate first`);
    }
    const table = this.freeIds.splice(0, needed);
    this.tables.set(seqId, table);
    return table;
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
    table.push(...this.freeIds.splice(0, missing));
    return table;
  }

  /** Returns every block of the sequence to the free list (no-op when it owns none). */
  free(seqId: string): void {
    const table = this.tables.get(seqId);
    if (!table) return;
    this.tables.delete(seqId);
    this.freeIds.push(...table);
  }

  /** Sequences that currently own blocks (for leak checks). */
  owners(): string[] {
    return [...this.tables.keys()];
  }
}
