/**
 * Dashboard: live throughput, step latency, running/waiting, KV usage, the prefix-cache
 * hit rate per KV rank, transfer heatmaps, CUDA graph replays and the FFN loop of every
 * FFN rank. Everything derives
 * from the metrics store's model, recomputed only when its version changes (<= 10 Hz).
 * When the topology is not running, or its metrics stopped coming, the panels say so and
 * the live numbers show "–": what stays on screen is history, marked as such.
 */
import { useEffect, useMemo, useState } from 'react';
import { useFields, useLaunch, useMetrics } from '../AppContext.js';
import { Banner } from '../components/Banner.js';
import { DashboardView } from '../components/DashboardView.js';
import { frozenReason } from '../lib/launchText.js';
import { CHART_RANGES_MS, type ChartRangeMs } from '../../common/ChartHistory.js';
import { chartRangeLabel } from '../stores/chartRange.js';
import type { ScreenProps } from './types.js';

export function DashboardScreen({ navigate }: ScreenProps) {
  const metrics = useFields(useMetrics, 'model', 'version', 'heatmapWindow', 'setHeatmapWindow', 'paused', 'setPaused', 'launchId', 'lastDataAtMs', 'history', 'chartRangeMs', 'setChartRange');
  const { model, version, heatmapWindow, setHeatmapWindow, paused, setPaused, launchId: metricsLaunchId, lastDataAtMs, history, chartRangeMs, setChartRange } = metrics;
  const progress = useLaunch((s) => s.progress);
  // The console's chart history counts: after a reload the charts show what it kept.
  const hasData = useMemo(() => model.series.size > 0 || history.newestMs !== null, [model, history, version]);
  // Staleness shows without new data: re-check once a second.
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    const t = setInterval(() => setNow(Date.now()), 1000);
    return () => clearInterval(t);
  }, []);
  const frozen = hasData && !paused ? frozenReason(progress, metricsLaunchId, lastDataAtMs, now) : null;

  return (
    <>
      <div className="row">
        <h2>Dashboard</h2>
        <span className="spacer" />
        <label className="inline" title="What the line charts show: the last 1 minute at full resolution, or 5 / 15 minutes in 1 s / 2 s buckets (line: mean; band: min to max)">
          <span>Charts</span>
          <select value={chartRangeMs} onChange={(e) => setChartRange(Number(e.target.value) as ChartRangeMs)} data-testid="chart-range">
            {CHART_RANGES_MS.map((r) => (
              <option key={r} value={r}>
                last {chartRangeLabel(r)}
              </option>
            ))}
          </select>
        </label>
        <label className="inline">
          <span>Transfer bytes</span>
          <select value={heatmapWindow} onChange={(e) => setHeatmapWindow(e.target.value as 'total' | 'window')} data-testid="heatmap-window">
            <option value="window">last 10 s</option>
            <option value="total">since launch</option>
          </select>
        </label>
        <button className="btn" onClick={() => setPaused(!paused)} aria-pressed={paused}>
          {paused ? 'Resume' : 'Pause'}
        </button>
      </div>
      {paused && <Banner kind="info" message="Paused: the panels keep the values they had; press Resume to follow the topology again." testId="dashboard-paused" />}
      {frozen && <Banner kind="warn" message={frozen} testId="dashboard-frozen" />}
      {!hasData ? (
        <div className="panel">
          <p>No metrics yet: they stream once a topology's ranks are ready.</p>
          <button className="btn primary" onClick={() => navigate('topology')}>
            Launch a topology
          </button>
        </div>
      ) : (
        <DashboardView model={model} version={version} heatmapWindow={heatmapWindow} history={history} chartRangeMs={chartRangeMs} frozen={frozen !== null} />
      )}
    </>
  );
}
