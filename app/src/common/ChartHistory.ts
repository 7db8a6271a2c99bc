/**
 * Bounded, downsampled history of the Dashboard's chart series. Every point goes into
 * each tier; a tier sums the points that fall in one of its bucketMs-long slots (count,
 * sum, min, max per series) and keeps a fixed number of buckets, so memory stays bounded
 * however long the console runs and however fast points come. A window of the last N ms
 * reads the finest tier that spans it: with CHART_TIERS that is at most 600 buckets
 * whatever the range, so a chart never redraws thousands of points.
 *
 * Used on both sides of the bridge: ConsoleService keeps one per launch (so a renderer
 * that reloads gets the last 15 minutes, `toData` / `fromData`), and the renderer's
 * metrics store keeps its own copy going from there. Pure data; no timers, no DOM.
 */
import type { ChartHistoryData } from '@afd/shared';
import { RingBuffer } from './RingBuffer.js';

/** Every chart series at one time; NaN (or a missing key) means unknown. */
export interface ChartRow {
  /** Epoch ms. */
  tMs: number;
  values: Readonly<Record<string, number>>;
}

export interface ChartTierSpec {
  /** Bucket length, ms. */
  bucketMs: number;
  /** Time the tier keeps, ms. */
  spanMs: number;
}

/** The fold period (a point per fold): buckets up to this long hold single points, longer ones summarize several, ms. */
export const FULL_RESOLUTION_MS = 100;

/**
 * Full resolution (the 100 ms fold period) for the last minute, 1 s buckets for 5 minutes,
 * 2 s buckets for 15 minutes: 600, 300 and 450 buckets.
 */
export const CHART_TIERS: readonly ChartTierSpec[] = [
  { bucketMs: FULL_RESOLUTION_MS, spanMs: 60_000 },
  { bucketMs: 1_000, spanMs: 300_000 },
  { bucketMs: 2_000, spanMs: 900_000 },
];

/** The ranges the Dashboard's picker offers, ms. */
export const CHART_RANGES_MS = [60_000, 300_000, 900_000] as const;
export type ChartRangeMs = (typeof CHART_RANGES_MS)[number];

/** The buckets of the last rangeMs, as columns (oldest first). */
export interface ChartWindow {
  rangeMs: number;
  /** Bucket length of the tier read, ms. */
  bucketMs: number;
  /** Time of the newest point of each bucket, epoch ms. */
  tMs: Float64Array;
  /** Per series key with a value in the window: the mean, min and max of each bucket; NaN where unknown. */
  mean: ReadonlyMap<string, Float64Array>;
  min: ReadonlyMap<string, Float64Array>;
  max: ReadonlyMap<string, Float64Array>;
  /** The newest values (the finest tier's newest bucket), whatever the range: what a legend shows as now. */
  latest: ReadonlyMap<string, number>;
}

/** A value as the wire carries it: 6 significant digits (plenty for a chart, half the JSON). */
const wireNumber = (v: number): number => Number(v.toPrecision(6));

interface Bucket {
  /** floor(tMs / bucketMs). */
  slot: number;
  /** Newest point's time, epoch ms. */
  tMs: number;
  /**
   * Per series index k (ChartHistory's key table): count, sum, min, max of its finite values
   * at [4k .. 4k+3]; count 0 (or past the end) = no value. Flat numbers, no per-series
   * objects: a 15-minute window reads ~450 buckets x every series once per fold.
   */
  stats: number[];
}

class Tier {
  readonly buckets: RingBuffer<Bucket>;

  constructor(readonly spec: ChartTierSpec) {
    if (!(spec.bucketMs > 0) || !(spec.spanMs >= spec.bucketMs)) throw new Error(`chart history tier needs 0 < bucketMs <= spanMs, got ${spec.bucketMs} / ${spec.spanMs} ms`);
    // One more than the span holds: the open bucket plus a full span of closed ones.
    this.buckets = new RingBuffer(Math.ceil(spec.spanMs / spec.bucketMs) + 1);
  }

  /** Adds a point given as series indices and their finite values. */
  add(tMs: number, keys: readonly number[], values: readonly number[]): void {
    const slot = Math.floor(tMs / this.spec.bucketMs);
    let b = this.buckets.last();
    if (!b || b.slot !== slot) {
      b = { slot, tMs, stats: [] };
      this.buckets.push(b);
    }
    b.tMs = tMs;
    const st = b.stats;
    for (let j = 0; j < keys.length; j++) {
      const at = 4 * keys[j]!;
      const v = values[j]!;
      while (st.length < at + 4) st.push(0);
      if (st[at] === 0) {
        st[at] = 1;
        st[at + 1] = v;
        st[at + 2] = v;
        st[at + 3] = v;
        continue;
      }
      st[at]! += 1;
      st[at + 1]! += v;
      if (v < st[at + 2]!) st[at + 2] = v;
      if (v > st[at + 3]!) st[at + 3] = v;
    }
  }
}

export class ChartHistory {
  private readonly tiers: Tier[];
  /** Series keys in the order first seen; a bucket's stats are indexed by position here. */
  private readonly keys: string[] = [];
  private readonly keyIndex = new Map<string, number>();

  constructor(tiers: readonly ChartTierSpec[] = CHART_TIERS) {
    if (tiers.length === 0) throw new Error('chart history needs at least one tier');
    this.tiers = [...tiers].sort((a, b) => a.bucketMs - b.bucketMs).map((t) => new Tier(t));
  }

  /** Rebuilds a history from its wire form (the console's `metrics.history`). */
  static fromData(data: ChartHistoryData): ChartHistory {
    const h = new ChartHistory(data.tiers.map(({ bucketMs, spanMs }) => ({ bucketMs, spanMs })));
    for (const tier of h.tiers) {
      const wire = data.tiers.find((t) => t.bucketMs === tier.spec.bucketMs)!;
      for (const b of wire.buckets) {
        const stats: number[] = [];
        for (const [key, s] of Object.entries(b.cols)) {
          const at = 4 * h.indexOf(key);
          while (stats.length < at + 4) stats.push(0);
          stats.splice(at, 4, ...(typeof s === 'number' ? [1, s, s, s] : s));
        }
        tier.buckets.push({ slot: Math.floor(b.tMs / tier.spec.bucketMs), tMs: b.tMs, stats });
      }
    }
    return h;
  }

  /** The wire form: every tier's buckets, oldest first, values at 6 significant digits. */
  toData(): ChartHistoryData {
    return {
      tiers: this.tiers.map((t) => ({
        bucketMs: t.spec.bucketMs,
        spanMs: t.spec.spanMs,
        buckets: t.buckets.toArray().map((b) => {
          const cols: ChartHistoryData['tiers'][number]['buckets'][number]['cols'] = {};
          const st = b.stats;
          for (let k = 0, at = 0; at < st.length; k++, at += 4) {
            if (st[at] === 1) cols[this.keys[k]!] = wireNumber(st[at + 1]!);
            else if (st[at]! > 1) cols[this.keys[k]!] = [st[at]!, wireNumber(st[at + 1]!), wireNumber(st[at + 2]!), wireNumber(st[at + 3]!)];
          }
          return { tMs: b.tMs, cols };
        }),
      })),
    };
  }

  /** The tiers, finest first. */
  get tierSpecs(): ChartTierSpec[] {
    return this.tiers.map((t) => ({ ...t.spec }));
  }

  /** Time of the newest point, epoch ms; null when empty. */
  get newestMs(): number | null {
    return this.tiers[0]!.buckets.last()?.tMs ?? null;
  }

  /** Buckets held over all tiers (bounded by the tiers' spans). */
  get bucketCount(): number {
    return this.tiers.reduce((n, t) => n + t.buckets.size, 0);
  }

  /** Adds a point; one older than the newest is dropped (the history only grows forward in time). */
  push(row: ChartRow): void {
    const newest = this.newestMs;
    if (newest !== null && row.tMs < newest) return;
    const keys: number[] = [];
    const values: number[] = [];
    for (const key in row.values) {
      const v = row.values[key]!;
      if (!Number.isFinite(v)) continue;
      keys.push(this.indexOf(key));
      values.push(v);
    }
    for (const t of this.tiers) t.add(row.tMs, keys, values);
  }

  private indexOf(key: string): number {
    let k = this.keyIndex.get(key);
    if (k === undefined) {
      k = this.keys.length;
      this.keys.push(key);
      this.keyIndex.set(key, k);
    }
    return k;
  }

  clear(): void {
    for (const t of this.tiers) t.buckets.clear();
    this.keys.length = 0;
    this.keyIndex.clear();
  }

  /**
   * The buckets whose newest point lies in the last rangeMs before the newest point, from
   * the finest tier that spans rangeMs (the coarsest when none does).
   */
  window(rangeMs: number): ChartWindow {
    const tier = this.tiers.find((t) => t.spec.spanMs >= rangeMs) ?? this.tiers[this.tiers.length - 1]!;
    const ring = tier.buckets;
    const newest = this.newestMs ?? 0;
    let first = ring.size;
    while (first > 0 && ring.at(first - 1)!.tMs >= newest - rangeMs) first--;
    const n = ring.size - first;
    const tMs = new Float64Array(n);
    // Per series index: [mean, min, max] columns, made when the series first has a value.
    const cols: (Float64Array[] | undefined)[] = new Array(this.keys.length);
    for (let i = 0; i < n; i++) {
      const b = ring.at(first + i)!;
      tMs[i] = b.tMs;
      const st = b.stats;
      for (let k = 0, at = 0; at < st.length; k++, at += 4) {
        const count = st[at]!;
        if (count === 0) continue;
        const c = (cols[k] ??= [0, 1, 2].map(() => new Float64Array(n).fill(Number.NaN)));
        c[0]![i] = st[at + 1]! / count;
        c[1]![i] = st[at + 2]!;
        c[2]![i] = st[at + 3]!;
      }
    }
    const mean = new Map<string, Float64Array>();
    const min = new Map<string, Float64Array>();
    const max = new Map<string, Float64Array>();
    cols.forEach((c, k) => {
      if (!c) return;
      mean.set(this.keys[k]!, c[0]!);
      min.set(this.keys[k]!, c[1]!);
      max.set(this.keys[k]!, c[2]!);
    });
    const latest = new Map<string, number>();
    const st = this.tiers[0]!.buckets.last()?.stats ?? [];
    for (let k = 0, at = 0; at < st.length; k++, at += 4) if (st[at]! > 0) latest.set(this.keys[k]!, st[at + 1]! / st[at]!);
    return { rangeMs, bucketMs: tier.spec.bucketMs, tMs, mean, min, max, latest };
  }
}
