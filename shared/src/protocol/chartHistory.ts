/**
 * The console's chart history on the bridge: what ConsoleService keeps of the Dashboard's
 * chart series (15 minutes, downsampled in tiers of coarser buckets) and hands to a
 * renderer that loads or reloads, so its charts do not start empty. The history itself
 * (pushing points, bucketing, windows) is app/src/common/ChartHistory.ts; this is its wire
 * form: plain numbers only (no NaN, which JSON cannot carry), at 6 significant digits (a
 * 15-minute history of 64 ranks' series stays well inside the bridge's 8 MiB frame).
 */
import { z } from 'zod';

/** One bucket: the points that fell into one bucketMs-long slot of a tier. */
export const chartBucketSchema = z.object({
  /** Time of the newest point in the bucket, epoch ms (the bucket is floor(tMs / bucketMs)). */
  tMs: z.number(),
  /**
   * Per series key: [count, sum, min, max] of the bucket's finite values, or the value
   * itself when the bucket holds one point (most of the full-resolution tier: half the
   * bytes). A series with no finite value in the bucket (unknown then) has no entry.
   */
  cols: z.record(z.string(), z.union([z.number(), z.tuple([z.int().positive(), z.number(), z.number(), z.number()])])),
});
export type ChartBucket = z.infer<typeof chartBucketSchema>;

/** One resolution of the history: buckets of bucketMs, oldest first. */
export const chartTierSchema = z.object({
  /** Bucket length, ms. */
  bucketMs: z.int().positive(),
  /** Time span the tier keeps, ms. */
  spanMs: z.int().positive(),
  /** Oldest first. */
  buckets: z.array(chartBucketSchema),
});

/** Every tier, finest first. */
export const chartHistorySchema = z.object({ /** Finest first. */ tiers: z.array(chartTierSchema) });
export type ChartHistoryData = z.infer<typeof chartHistorySchema>;
