/**
 * Dashboard: live throughput, step latency, running/waiting, KV usage, transfer
 * heatmaps, CUDA graph replays and the FFN loop of every FFN rank. Everything derives
 * from the metrics store's model, recomputed only when its version changes (<= 10 Hz).
 * When the topology is not running, or its metrics stopped coming, the panels say so and
 * the live numbers show "–": what stays on screen is history, marked as such.
 */
import { useEffect, useMemo, useState } from 'react';
import type { LaunchProgress } from '@afd/shared';
import { useLaunch, useMetrics } from '../AppContext.js';
import { Banner } from '../components/Banner.js';
import { DashboardView } from '../components/DashboardView.js';
import type { ScreenProps } from './types.js';

/** After this long without a snapshot of a running topology, the numbers are stale. */
export const STALE_AFTER_MS = 3000;

/** Why the numbers on screen are not live, or null when they are. */
export function frozenReason(progress: LaunchProgress | null, metricsLaunchId: string | null, lastDataAtMs: number | null, nowMs: number): string | null {
  const at = lastDataAtMs !== null ? new Date(lastDataAtMs).toLocaleTimeString() : '?';
  if (!progress || progress.launchId !== metricsLaunchId) return `These are the last metrics of an earlier launch (received at ${at}).`;
  if (progress.state !== 'running') return `The topology is ${progress.state}: these are its last metrics (received at ${at}).`;
  if (lastDataAtMs !== null && nowMs - lastDataAtMs > STALE_AFTER_MS) return `No metrics for ${Math.round((nowMs - lastDataAtMs) / 1000)} s: these are the last ones (received at ${at}). Is an agent lost? See the Agents screen.`;
  return null;
}

export function DashboardScreen({ navigate }: ScreenProps) {
  const model = useMetrics((s) => s.model);
  const version = useMetrics((s) => s.version);
  const heatmapWindow = useMetrics((s) => s.heatmapWindow);
  const setHeatmapWindow = useMetrics((s) => s.setHeatmapWindow);
  const paused = useMetrics((s) => s.paused);
  const setPaused = useMetrics((s) => s.setPaused);
  const metricsLaunchId = useMetrics((s) => s.launchId);
  const lastDataAtMs = useMetrics((s) => s.lastDataAtMs);
  const progress = useLaunch((s) => s.progress);
  const hasData = useMemo(() => model.series.size > 0, [model, version]);
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
        <DashboardView model={model} version={version} heatmapWindow={heatmapWindow} frozen={frozen !== null} />
      )}
    </>
  );
}
