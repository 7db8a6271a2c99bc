/** The Dashboard charts' time range, remembered in browser storage across reloads. */
import { CHART_RANGES_MS, type ChartRangeMs } from '../../common/ChartHistory.js';
import { STORAGE_PREFIX, type KeyValueStorage } from '../lib/persist.js';

const KEY = `${STORAGE_PREFIX}chartRangeMs`;

/** The range shown when none was picked: the last minute. */
export const DEFAULT_CHART_RANGE_MS: ChartRangeMs = 60_000;

/** The remembered range; the default when none is stored or what is stored is not a range on offer. */
export function loadChartRange(storage: KeyValueStorage | null): ChartRangeMs {
  const v = Number(storage?.getItem(KEY));
  return (CHART_RANGES_MS as readonly number[]).includes(v) ? (v as ChartRangeMs) : DEFAULT_CHART_RANGE_MS;
}

export function saveChartRange(storage: KeyValueStorage | null, rangeMs: ChartRangeMs): void {
  try {
    storage?.setItem(KEY, String(rangeMs));
  } catch (e) {
    console.warn(`chart range not remembered: ${(e as Error).message}`);
  }
}

/** "1 min", "15 min". */
export const chartRangeLabel = (rangeMs: number): string => `${rangeMs / 60_000} min`;
