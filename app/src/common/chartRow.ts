/**
 * One Dashboard point as a row of chart series (what ChartHistory keeps): flat keys, the
 * fractions as percentages. The console service and the renderer both make rows with it,
 * so a history handed over on reload has the renderer's own keys and units.
 */
import type { ChartRow } from './ChartHistory.js';
import type { DashboardPoint } from './dashboardModel.js';

/** Series key of a rank's step-time series (ms). */
export const stepKey = (rankLabel: string): string => `step_${rankLabel}`;

/** Series key of a KV rank's windowed prefix-cache hit rate (%). */
export const prefixKey = (rankLabel: string): string => `prefix_${rankLabel}`;

/** The rank label of a per-rank key with this prefix ('step_' or 'prefix_'); null for other keys. */
export function rankOfKey(key: string, prefix: 'step_' | 'prefix_'): string | null {
  return key.startsWith(prefix) ? key.slice(prefix.length) : null;
}

/**
 * Keys tokensPerSecond, running, waiting, kvUsage (%), kvCached (%), hits, misses,
 * captures (per s), hitRate (%), prefixHitRate (%), step_<rank> (ms) for the ranks that
 * stepped lately, prefix_<rank> (%) for the KV ranks that looked something up in the window.
 */
export function pointRow(p: DashboardPoint): ChartRow {
  const values: Record<string, number> = {
    tokensPerSecond: p.tokensPerSecond,
    running: p.running,
    waiting: p.waiting,
    kvUsage: p.kvUsage * 100,
    kvCached: p.kvCached * 100,
    hits: p.graphHitsPerSecond,
    misses: p.graphMissesPerSecond,
    captures: p.graphCapturesPerSecond,
    hitRate: p.graphHitRate * 100,
    prefixHitRate: p.prefixHitRate * 100,
  };
  for (const [label, ms] of Object.entries(p.stepMs)) values[stepKey(label)] = ms;
  for (const [label, rate] of Object.entries(p.prefixHitRateByRank)) values[prefixKey(label)] = rate * 100;
  return { tMs: p.tMs, values };
}
