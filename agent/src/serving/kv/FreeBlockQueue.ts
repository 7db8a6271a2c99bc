/**
 * The free KV blocks in eviction order: a doubly linked list over block ids (typed arrays,
 * no allocation per operation), so a block can leave from the front (the next one handed
 * out), from anywhere (a cached block found again by its hash) or join at either end, each
 * in O(1). With prefix caching, a free block may still hold a cached prefix: the front is
 * the least recently freed, the first to be reused (evicted).
 */
const NONE = -1;

export class FreeBlockQueue {
  private readonly prev: Int32Array;
  private readonly next: Int32Array;
  private readonly queued: Uint8Array;
  private head = NONE;
  private tail = NONE;
  private count = 0;

  /** A queue of blocks 0..numBlocks-1 in id order. */
  constructor(numBlocks: number) {
    this.prev = new Int32Array(numBlocks).fill(NONE);
    this.next = new Int32Array(numBlocks).fill(NONE);
    this.queued = new Uint8Array(numBlocks);
    for (let b = 0; b < numBlocks; b++) this.pushBack(b);
  }

  get size(): number {
    return this.count;
  }

  has(block: number): boolean {
    return this.queued[block] === 1;
  }

  /** Takes the block at the front; throws when empty. */
  popFront(): number {
    if (this.head === NONE) throw new Error('FreeBlockQueue.popFront: no free block');
    const b = this.head;
    this.remove(b);
    return b;
  }

  /** Adds a block at the back (the last to be reused). */
  pushBack(block: number): void {
    this.checkAbsent(block);
    this.prev[block] = this.tail;
    this.next[block] = NONE;
    if (this.tail === NONE) this.head = block;
    else this.next[this.tail] = block;
    this.tail = block;
    this.queued[block] = 1;
    this.count++;
  }

  /** Adds a block at the front (the next to be reused). */
  pushFront(block: number): void {
    this.checkAbsent(block);
    this.next[block] = this.head;
    this.prev[block] = NONE;
    if (this.head === NONE) this.tail = block;
    else this.prev[this.head] = block;
    this.head = block;
    this.queued[block] = 1;
    this.count++;
  }

  /** Takes a block out wherever it is; throws when it is not queued. */
  remove(block: number): void {
    if (this.queued[block] !== 1) throw new Error(`FreeBlockQueue.remove: block ${block} is not free`);
    const p = this.prev[block]!;
    const n = this.next[block]!;
    if (p === NONE) this.head = n;
    else this.next[p] = n;
    if (n === NONE) this.tail = p;
    else this.prev[n] = p;
    this.prev[block] = NONE;
    this.next[block] = NONE;
    this.queued[block] = 0;
    this.count--;
  }

  /** The queued blocks, front first (tests and leak checks). */
  toArray(): number[] {
    const out: number[] = [];
    for (let b = this.head; b !== NONE; b = this.next[b]!) out.push(b);
    return out;
  }

  private checkAbsent(block: number): void {
    if (this.queued[block] === 1) throw new Error(`FreeBlockQueue: block ${block} is already free`);
  }
}
