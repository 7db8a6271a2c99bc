/**
 * Dashboard: live throughput, step latency, running/waiting, KV usage, transfer
 * heatmaps, CUDA graph replays and the FFN loop of every FFN rank. Everything derives
 * from the metrics store's model, recomputed only when its version changes (<= 10 Hz).
 */
import { useMemo } from 'react';
import { useMetrics } from '../AppContext.js';
import { DashboardView } from '../components/DashboardView.js';
import type { ScreenProps } from './types.js';

export function DashboardScreen({ navigate }: ScreenProps) {
  const model = useMetrics((s) => s.model);
  const version = useMetrics((s) => s.version);
  const heatmapWindow = useMetrics((s) => s.heatmapWindow);
  const setHeatmapWindow = useMetrics((s) => s.setHeatmapWindow);
  const paused = useMetrics((s) => s.paused);
  const setPaused = useMetrics((s) => s.setPaused);
  const hasData = useMemo(() => model.series.size > 0, [model, version]);

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
      {!hasData ? (
        <div className="panel">
          <p>No metrics yet: they stream once a topology's ranks are ready.</p>
          <button className="btn primary" onClick={() => navigate('topology')}>
            Launch a topology
          </button>
        </div>
      ) : (
        <DashboardView model={model} version={version} heatmapWindow={heatmapWindow} />
      )}
    </>
  );
}
