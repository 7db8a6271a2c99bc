/**
 * Fixed-capacity FIFO: pushing past capacity drops the oldest item. Used for every live
 * series and log view so memory and render cost stay bounded however long the console runs.
 */
export class RingBuffer<T> {
  private readonly items: (T | undefined)[];
  private start = 0;
  private count = 0;
  /** Total items ever pushed (also counts the dropped ones). */
  private pushedTotal = 0;

  constructor(readonly capacity: number) {
    if (!Number.isInteger(capacity) || capacity <= 0) {
      throw new Error(`RingBuffer capacity must be a positive integer, got ${capacity}`);
    }
    this.items = new Array<T | undefined>(capacity);
  }

  get size(): number {
    return this.count;
  }

  /** How many items were ever pushed, including those already dropped. */
  get totalPushed(): number {
    return this.pushedTotal;
  }

  /** How many items were dropped because the buffer was full. */
  get dropped(): number {
    return this.pushedTotal - this.count;
  }

  push(item: T): void {
    const end = (this.start + this.count) % this.capacity;
    this.items[end] = item;
    if (this.count < this.capacity) this.count += 1;
    else this.start = (this.start + 1) % this.capacity;
    this.pushedTotal += 1;
  }

  pushAll(items: Iterable<T>): void {
    for (const item of items) this.push(item);
  }

  /** Item i counted from the oldest (0) to the newest (size - 1). */
  at(i: number): T | undefined {
    if (i < 0 || i >= this.count) return undefined;
    return this.items[(this.start + i) % this.capacity];
  }

  /** The newest item. */
  last(): T | undefined {
    return this.at(this.count - 1);
  }

  /** Empties the buffer and resets the push/drop counters. */
  clear(): void {
    this.items.fill(undefined);
    this.start = 0;
    this.count = 0;
    this.pushedTotal = 0;
  }

  /** Oldest to newest, as a new array. */
  toArray(): T[] {
    const out: T[] = new Array<T>(this.count);
    for (let i = 0; i < this.count; i++) out[i] = this.items[(this.start + i) % this.capacity] as T;
    return out;
  }

  /** The newest n items, oldest first. */
  tail(n: number): T[] {
    const k = Math.min(n, this.count);
    const out: T[] = new Array<T>(k);
    for (let i = 0; i < k; i++) out[i] = this.items[(this.start + this.count - k + i) % this.capacity] as T;
    return out;
  }
}
