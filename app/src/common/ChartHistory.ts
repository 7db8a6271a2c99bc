/**
 * Bounded, downsampled history of the Dashboard's chart series. Every point goes into
 * each tier (ChartTier); a tier sums the points that fall in one of its bucketMs-long slots
 * (count, sum, min, max per series) and keeps a fixed number of buckets, so memory stays bounded
 * however long the console runs and however fast points come. A window of the last N ms
 * reads the finest tier that spans it: with CHART_TIERS that is at most 600 buckets
 * whatever the range, so a chart never redraws thousands of points.
 *
 * Used on both sides of the bridge: ConsoleService keeps one per launch (so a renderer
 * that reloads gets the last 15 minutes, `toData` / `fromData`), and the renderer's
 * metrics store keeps its own copy going from there. Pure data; no timers, no DOM.
 */
import type { ChartHistoryData } from '@afd/shared';
import { ChartTier, type ChartTierSpec } from './ChartTier.js';

export type { ChartTierSpec } from './ChartTier.js';

/** Every chart series at one time; NaN (or a missing key) means unknown. */
export interface ChartRow {
  /** Epoch ms. */
  tMs: number;
  values: Readonly<Record<string, number>>;
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
}

/** A value as the wire carries it: 6 significant digits (plenty for a chart, half the JSON). */
const wireNumber = (v: number): number => Number(v.toPrecision(6));

export class ChartHistory {
  private readonly tiers: ChartTier[];
  /** Series keys in the order first seen; the tiers index their series by position here. */
  private readonly keys: string[] = [];
  private readonly keyIndex = new Map<string, number>();

  constructor(tiers: readonly ChartTierSpec[] = CHART_TIERS) {
    if (tiers.length === 0) throw new Error('chart history needs at least one tier');
    this.tiers = [...tiers].sort((a, b) => a.bucketMs - b.bucketMs).map((t) => new ChartTier(t));
  }

  /** Rebuilds a history from its wire form (the console's `metrics.history`). */
  static fromData(data: ChartHistoryData): ChartHistory {
    const h = new ChartHistory(data.tiers.map(({ bucketMs, spanMs }) => ({ bucketMs, spanMs })));
    for (const tier of h.tiers) {
      const wire = data.tiers.find((t) => t.bucketMs === tier.spec.bucketMs)!;
      for (const b of wire.buckets) {
        tier.add(b.tMs, [], []);
        for (const [key, s] of Object.entries(b.cols)) {
          const [count, sum, min, max] = typeof s === 'number' ? [1, s, s, s] : s;
          tier.addStats(b.tMs, h.indexOf(key), count, sum, min, max);
        }
      }
    }
    return h;
  }

  /** The wire form: every tier's buckets, oldest first, values at 6 significant digits. */
  toData(): ChartHistoryData {
    return {
      tiers: this.tiers.map((t) => {
        const buckets: ChartHistoryData['tiers'][number]['buckets'] = [];
        for (let i = 0; i < t.size; i++) {
          const cols: ChartHistoryData['tiers'][number]['buckets'][number]['cols'] = {};
          for (let k = 0; k < t.seriesCount; k++) {
            const st = t.statsAt(i, k);
            if (!st) continue;
            cols[this.keys[k]!] = st[0] === 1 ? wireNumber(st[1]) : [st[0], wireNumber(st[1]), wireNumber(st[2]), wireNumber(st[3])];
          }
          buckets.push({ tMs: t.timeAt(i), cols });
        }
        return { bucketMs: t.spec.bucketMs, spanMs: t.spec.spanMs, buckets };
      }),
    };
  }

  /** The tiers, finest first. */
  get tierSpecs(): ChartTierSpec[] {
    return this.tiers.map((t) => ({ ...t.spec }));
  }

  /** Time of the newest point, epoch ms; null when empty. */
  get newestMs(): number | null {
    const t = this.tiers[0]!;
    return t.size > 0 ? t.timeAt(t.size - 1) : null;
  }

  /** Buckets held over all tiers (bounded by the tiers' spans). */
  get bucketCount(): number {
    return this.tiers.reduce((n, t) => n + t.size, 0);
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

  clear(): void {
    for (const t of this.tiers) t.clear();
    this.keys.length = 0;
    this.keyIndex.clear();
  }

  /**
   * The buckets whose newest point lies in the last rangeMs before the newest point, from
   * the finest tier that spans rangeMs (the coarsest when none does).
   */
  window(rangeMs: number): ChartWindow {
    const tier = this.tierFor(rangeMs);
    const newest = this.newestMs ?? 0;
    let first = tier.size;
    while (first > 0 && tier.timeAt(first - 1) >= newest - rangeMs) first--;
    const tMs = new Float64Array(tier.size - first);
    for (let i = first; i < tier.size; i++) tMs[i - first] = tier.timeAt(i);
    const mean = new Map<string, Float64Array>();
    const min = new Map<string, Float64Array>();
    const max = new Map<string, Float64Array>();
    for (const [k, c] of tier.columns(first)) {
      mean.set(this.keys[k]!, c.mean);
      min.set(this.keys[k]!, c.min);
      max.set(this.keys[k]!, c.max);
    }
    return { rangeMs, bucketMs: tier.spec.bucketMs, tMs, mean, min, max };
  }

  /** Bucket length of the tier a window of rangeMs reads, ms. */
  bucketMsFor(rangeMs: number): number {
    return this.tierFor(rangeMs).spec.bucketMs;
  }

  /** The newest values (the finest tier's newest bucket: a single point at full resolution), whatever the range: a legend's "now". */
  latest(): Map<string, number> {
    const latest = new Map<string, number>();
    const finest = this.tiers[0]!;
    for (let k = 0; finest.size > 0 && k < finest.seriesCount; k++) {
      const st = finest.statsAt(finest.size - 1, k);
      if (st) latest.set(this.keys[k]!, st[1] / st[0]);
    }
    return latest;
  }

  /** The finest tier that spans rangeMs (the coarsest when none does). */
  private tierFor(rangeMs: number): ChartTier {
    return this.tiers.find((t) => t.spec.spanMs >= rangeMs) ?? this.tiers[this.tiers.length - 1]!;
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
}
