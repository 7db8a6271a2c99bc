/**
 * A chart's window as CSV: one row per point, the time (ISO 8601, UTC, and seconds before
 * the newest point), then each series with its unit in the header. Downsampled points
 * (buckets longer than the 100 ms fold) also get each bucket's min and max, so a spike the
 * mean hides is still in the file. Unknown values are empty cells.
 */
import { FULL_RESOLUTION_MS } from '../../common/ChartHistory.js';
import type { ChartColumns } from '../stores/chartColumns.js';

/** What a column of the CSV is. */
export interface CsvSeries {
  key: string;
  label: string;
  /** e.g. "tokens/s", "ms", "%". */
  unit: string;
}


/** RFC 4180 field: quoted when it holds a comma, quote or line break. */
const field = (s: string): string => (/[",\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s);

/** A number as written: up to 6 significant digits, no exponent for everyday sizes; '' when unknown. */
const num = (v: number | undefined): string => (v === undefined || !Number.isFinite(v) ? '' : String(Number(v.toPrecision(6))));

export function chartCsv(data: ChartColumns, series: readonly CsvSeries[]): string {
  const summary = data.bucketMs > FULL_RESOLUTION_MS;
  const header = ['time (UTC)', 'seconds before newest (s)'];
  for (const s of series) {
    header.push(`${s.label} (${s.unit})`);
    if (summary) header.push(`${s.label} min (${s.unit})`, `${s.label} max (${s.unit})`);
  }
  const lines = [header.map(field).join(',')];
  for (let i = 0; i < data.t.length; i++) {
    const row = [new Date(data.tMs[i]!).toISOString(), num(data.t[i])];
    for (const s of series) {
      row.push(num(data.values.get(s.key)?.[i]));
      if (summary) row.push(num(data.min.get(s.key)?.[i]), num(data.max.get(s.key)?.[i]));
    }
    lines.push(row.join(','));
  }
  return `${lines.join('\r\n')}\r\n`;
}

/** "afd-output-tokens-s-15min-2026-12-06T23-40-00Z" + ext: what the chart is, its range and when. */
export function exportFileName(title: string, rangeMs: number, atMs: number, ext: 'csv' | 'png'): string {
  const slug = title.toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-|-$/g, '') || 'chart';
  const stamp = new Date(atMs).toISOString().replace(/\.\d+Z$/, 'Z').replace(/:/g, '-');
  return `afd-${slug}-${rangeMs / 60_000}min-${stamp}.${ext}`;
}
