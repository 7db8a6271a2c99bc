/**
 * A live line chart over a ring buffer's points. Animation is off (live series would
 * otherwise re-animate on every 10 Hz tick) and dots are off (one SVG node per line).
 */
import { memo } from 'react';
import { CartesianGrid, Legend, Line, LineChart, ResponsiveContainer, Tooltip, XAxis, YAxis } from 'recharts';

export interface SeriesDef {
  /** Key of the value in each point. */
  key: string;
  /** Legend label. */
  label: string;
  color: string;
}

export interface TimeSeriesChartProps {
  /** Points oldest-first; `t` is seconds relative to now (negative), other keys are values. */
  data: readonly Record<string, number | null>[];
  series: readonly SeriesDef[];
  /** Formats axis ticks and tooltip values. */
  format?: (v: number) => string;
  heightPx?: number;
  /** Shown instead of empty axes when no series has a value. */
  emptyText?: string;
}

export const PALETTE = ['#5eb1ff', '#4cc38a', '#ffd166', '#ff6b6b', '#c792ea', '#89ddff', '#f78c6c', '#a3be8c'];

/** Re-renders only when its data array (or series/format) changes. */
export const TimeSeriesChart = memo(function TimeSeriesChart({ data, series, format, heightPx = 180, emptyText = 'no data reported yet' }: TimeSeriesChartProps) {
  const empty = !data.some((row) => series.some((s) => row[s.key] !== null && row[s.key] !== undefined));
  if (empty) {
    return (
      <div className="chart-empty" style={{ height: heightPx }}>
        {emptyText}
      </div>
    );
  }
  return (
    <div style={{ width: '100%', height: heightPx }}>
      <ResponsiveContainer width="100%" height="100%" debounce={100}>
        <LineChart data={data as Record<string, number | null>[]} margin={{ top: 4, right: 8, bottom: 0, left: 0 }}>
          <CartesianGrid stroke="#2c323c" strokeDasharray="3 3" />
          <XAxis dataKey="t" type="number" domain={['dataMin', 0]} tickFormatter={(v: number) => `${v.toFixed(0)}s`} stroke="#9aa3b2" fontSize={11} />
          <YAxis stroke="#9aa3b2" fontSize={11} width={56} tickFormatter={format ? (v: number) => format(v) : undefined} />
          <Tooltip
            isAnimationActive={false}
            contentStyle={{ background: '#1c2027', border: '1px solid #2c323c' }}
            labelFormatter={(v) => `${Number(v).toFixed(1)} s`}
            formatter={format ? (v) => format(Number(v)) : undefined}
          />
          {series.length > 1 && <Legend wrapperStyle={{ fontSize: 12 }} />}
          {series.map((s) => (
            <Line key={s.key} type="linear" dataKey={s.key} name={s.label} stroke={s.color} dot={false} isAnimationActive={false} strokeWidth={1.5} connectNulls />
          ))}
        </LineChart>
      </ResponsiveContainer>
    </div>
  );
});
