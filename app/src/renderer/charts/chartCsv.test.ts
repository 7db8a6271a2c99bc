import { describe, expect, it } from 'vitest';
import { chartCsv, exportFileName } from './chartCsv.js';
import type { ChartColumns } from '../stores/chartColumns.js';

const cols = (bucketMs: number): ChartColumns => ({
  t: new Float64Array([-1, 0]),
  tMs: new Float64Array([Date.UTC(2026, 11, 6, 23, 0, 0), Date.UTC(2026, 11, 6, 23, 0, 1)]),
  values: new Map([
    ['tps', new Float64Array([12.3456789, Number.NaN])],
    ['kv', new Float64Array([50, 51.5])],
  ]),
  min: new Map([
    ['tps', new Float64Array([10, Number.NaN])],
    ['kv', new Float64Array([49, 51])],
  ]),
  max: new Map([
    ['tps', new Float64Array([15, Number.NaN])],
    ['kv', new Float64Array([52, 52])],
  ]),
  rangeMs: 60_000,
  bucketMs,
});

describe('chartCsv', () => {
  const series = [
    { key: 'tps', label: 'tokens/s', unit: 'tokens/s' },
    { key: 'kv', label: 'in use, "KV"', unit: '%' },
  ];

  it('writes time and each series with its unit; unknown values are empty', () => {
    const csv = chartCsv(cols(100), series);
    expect(csv.split('\r\n')).toEqual([
      'time (UTC),seconds before newest (s),tokens/s (tokens/s),"in use, ""KV"" (%)"',
      '2026-12-06T23:00:00.000Z,-1,12.3457,50',
      '2026-12-06T23:00:01.000Z,0,,51.5',
      '',
    ]);
  });

  it('adds each bucket\'s min and max when the points are downsampled', () => {
    const [header, first] = chartCsv(cols(2_000), series).split('\r\n');
    expect(header).toBe('time (UTC),seconds before newest (s),tokens/s (tokens/s),tokens/s min (tokens/s),tokens/s max (tokens/s),"in use, ""KV"" (%)","in use, ""KV"" min (%)","in use, ""KV"" max (%)"');
    expect(first).toBe('2026-12-06T23:00:00.000Z,-1,12.3457,10,15,50,49,52');
  });

  it('names the file after the chart, its range and the time', () => {
    expect(exportFileName('Output tokens/s', 900_000, Date.UTC(2026, 11, 6, 23, 40, 5, 123), 'csv')).toBe('afd-output-tokens-s-15min-2026-12-06T23-40-05Z.csv');
  });
});
