/** A chart's CSV and PNG buttons: each downloads the window on screen. */
import { useState } from 'react';
import { chartCsv, exportFileName } from '../charts/chartCsv.js';
import { chartPng } from '../charts/chartPng.js';
import type { LineChartFrame } from '../charts/drawLineChart.js';
import { downloadBlob, downloadText } from '../lib/download.js';
import type { ChartColumns } from '../stores/chartColumns.js';
import type { SeriesDef } from './LiveLineChart.js';

export interface ChartExportButtonsProps {
  title: string;
  data: ChartColumns;
  series: readonly SeriesDef[];
  disabled: boolean;
  /** The frame to draw into the PNG (asked for only when the user exports). */
  frame: () => LineChartFrame;
}

export function ChartExportButtons({ title, data, series, disabled, frame }: ChartExportButtonsProps) {
  const [error, setError] = useState<string | null>(null);
  const newestMs = data.tMs.length > 0 ? data.tMs[data.tMs.length - 1]! : Date.now();
  const csv = (): void => downloadText(exportFileName(title, data.rangeMs, newestMs, 'csv'), chartCsv(data, series), 'text/csv');
  const png = (): void => {
    setError(null);
    chartPng(frame(), title, series).then(
      (blob) => downloadBlob(exportFileName(title, data.rangeMs, newestMs, 'png'), blob),
      (e: unknown) => setError(e instanceof Error ? e.message : String(e)),
    );
  };
  return (
    <span className="chart-actions">
      {error && (
        <span className="small" style={{ color: 'var(--err)' }} role="alert">
          {error}
        </span>
      )}
      <button className="btn small" disabled={disabled} onClick={csv} title={`Download the ${title} chart's window as CSV`} data-testid="chart-export-csv">
        CSV
      </button>
      <button className="btn small" disabled={disabled} onClick={png} title={`Download the ${title} chart as a PNG image`} data-testid="chart-export-png">
        PNG
      </button>
    </span>
  );
}
