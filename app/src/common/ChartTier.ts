/**
 * One resolution of a ChartHistory: a fixed ring of bucketMs-long buckets, stored as
 * columns (one Float64Array ring per series and statistic) so that reading a window is a
 * few typed-array copies, not a walk over bucket objects: a 15-minute window of every
 * series is read once per fold on the page's main thread.
 */

/** A tier's resolution and reach. */
export interface ChartTierSpec {
  /** Bucket length, ms. */
  bucketMs: number;
  /** Time the tier keeps, ms. */
  spanMs: number;
}

/** The rings of one series; `mean`, `min` and `max` are NaN where the series has no value. */
interface SeriesRings {
  count: Float64Array;
  sum: Float64Array;
  mean: Float64Array;
  min: Float64Array;
  max: Float64Array;
  /** Sequence number of the newest bucket with a value (-1: none). */
  lastSeq: number;
}

/** A window's columns for one series. */
export interface TierColumns {
  mean: Float64Array;
  min: Float64Array;
  max: Float64Array;
}

export class ChartTier {
  readonly capacity: number;
  /** Ring position of the oldest bucket, and how many buckets are held. */
  private start = 0;
  private count = 0;
  /** Buckets ever opened: the newest bucket's sequence number is opened - 1. */
  private opened = 0;
  private readonly slots: Float64Array;
  private readonly times: Float64Array;
  /** By series index (the history's key table). */
  private readonly series: (SeriesRings | undefined)[] = [];

  constructor(readonly spec: ChartTierSpec) {
    if (!(spec.bucketMs > 0) || !(spec.spanMs >= spec.bucketMs)) throw new Error(`chart history tier needs 0 < bucketMs <= spanMs, got ${spec.bucketMs} / ${spec.spanMs} ms`);
    // One more than the span holds: the open bucket plus a full span of closed ones.
    this.capacity = Math.ceil(spec.spanMs / spec.bucketMs) + 1;
    this.slots = new Float64Array(this.capacity);
    this.times = new Float64Array(this.capacity);
  }

  get size(): number {
    return this.count;
  }

  /** Newest point's time of bucket i (0 = oldest). */
  timeAt(i: number): number {
    return this.times[(this.start + i) % this.capacity]!;
  }

  /** Adds a point: series indices and their finite values. */
  add(tMs: number, keys: readonly number[], values: readonly number[]): void {
    const pos = this.bucketFor(tMs);
    for (let j = 0; j < keys.length; j++) {
      const s = this.rings(keys[j]!);
      const v = values[j]!;
      const n = ++s.count[pos]!;
      if (n === 1) {
        s.sum[pos] = v;
        s.min[pos] = v;
        s.max[pos] = v;
      } else {
        s.sum[pos]! += v;
        if (v < s.min[pos]!) s.min[pos] = v;
        if (v > s.max[pos]!) s.max[pos] = v;
      }
      s.mean[pos] = s.sum[pos]! / n;
      s.lastSeq = this.opened - 1;
    }
  }

  /** Adds a whole bucket's statistics for one series (a history read back from the wire). */
  addStats(tMs: number, key: number, count: number, sum: number, min: number, max: number): void {
    const pos = this.bucketFor(tMs);
    const s = this.rings(key);
    s.count[pos] = count;
    s.sum[pos] = sum;
    s.min[pos] = min;
    s.max[pos] = max;
    s.mean[pos] = sum / count;
    s.lastSeq = this.opened - 1;
  }

  /** Bucket i's [count, sum, min, max] of series `key`; null when it has no value there. */
  statsAt(i: number, key: number): [number, number, number, number] | null {
    const s = this.series[key];
    const pos = (this.start + i) % this.capacity;
    if (!s || s.count[pos] === 0) return null;
    return [s.count[pos]!, s.sum[pos]!, s.min[pos]!, s.max[pos]!];
  }

  /** Number of series indices that have rings here. */
  get seriesCount(): number {
    return this.series.length;
  }

  /**
   * Buckets first..size-1 of every series that has a value among them (by series index).
   * All columns are views of one new buffer: one allocation per window, not three per
   * series (a typed array's backing store costs far more to allocate than to fill).
   */
  columns(first: number): Map<number, TierColumns> {
    const out = new Map<number, TierColumns>();
    const firstSeq = this.opened - this.count + first;
    const present: number[] = [];
    this.series.forEach((s, key) => {
      if (s && s.lastSeq >= firstSeq) present.push(key);
    });
    const n = this.count - first;
    const buf = new Float64Array(present.length * 3 * n);
    let at = 0;
    const view = (ring: Float64Array): Float64Array => {
      const v = buf.subarray(at, at + n);
      at += n;
      this.copyInto(v, ring, first);
      return v;
    };
    for (const key of present) {
      const s = this.series[key]!;
      out.set(key, { mean: view(s.mean), min: view(s.min), max: view(s.max) });
    }
    return out;
  }

  clear(): void {
    this.start = 0;
    this.count = 0;
    this.series.length = 0;
  }

  /** Ring position of the bucket of tMs: the newest one, or a new one (dropping the oldest when full). */
  private bucketFor(tMs: number): number {
    const slot = Math.floor(tMs / this.spec.bucketMs);
    let pos = (this.start + this.count - 1) % this.capacity;
    if (this.count === 0 || this.slots[pos] !== slot) {
      pos = (this.start + this.count) % this.capacity;
      if (this.count < this.capacity) this.count += 1;
      else this.start = (this.start + 1) % this.capacity;
      this.opened += 1;
      this.slots[pos] = slot;
      for (const s of this.series) if (s) this.empty(s, pos);
    }
    this.times[pos] = tMs;
    return pos;
  }

  private rings(key: number): SeriesRings {
    let s = this.series[key];
    if (!s) {
      const ring = (): Float64Array => new Float64Array(this.capacity);
      s = { count: ring(), sum: ring(), mean: ring().fill(Number.NaN), min: ring().fill(Number.NaN), max: ring().fill(Number.NaN), lastSeq: -1 };
      while (this.series.length < key) this.series.push(undefined);
      this.series[key] = s;
    }
    return s;
  }

  private empty(s: SeriesRings, pos: number): void {
    s.count[pos] = 0;
    s.sum[pos] = 0;
    s.mean[pos] = Number.NaN;
    s.min[pos] = Number.NaN;
    s.max[pos] = Number.NaN;
  }

  /** Ring buckets first..size-1, oldest first, into `out` (one or two block copies). */
  private copyInto(out: Float64Array, ring: Float64Array, first: number): void {
    const n = this.count - first;
    const from = (this.start + first) % this.capacity;
    const head = Math.min(n, this.capacity - from);
    out.set(ring.subarray(from, from + head));
    if (head < n) out.set(ring.subarray(0, n - head), head);
  }
}
