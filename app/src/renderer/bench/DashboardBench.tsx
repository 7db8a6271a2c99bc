/**
 * Frame-time benchmark of the Dashboard (open index.html?bench=dashboard): synthetic
 * snapshots at 10 Hz from 8 ranks (4A4F) x 48 layers x 2 stages flow through the real
 * metrics store into the real DashboardView, while requestAnimationFrame gaps and long
 * tasks are recorded. Results land in window.__afdBench for the Playwright bench spec.
 */
import { useLayoutEffect } from 'react';
import { createRoot } from 'react-dom/client';
import { useStore } from 'zustand';
import { DashboardView } from '../components/DashboardView.js';
import { SyntheticMetrics } from '../lib/syntheticMetrics.js';
import { createMetricsStore } from '../stores/metricsStore.js';

export interface BenchResult {
  durationMs: number;
  frames: number;
  /** Gaps between animation frames, ms. */
  frameP50Ms: number;
  frameP95Ms: number;
  frameP99Ms: number;
  frameMaxMs: number;
  /** Frame gaps over 25 ms: at 60 Hz, a missed vsync (16.7 ms gaps plus timer jitter are on time). */
  missedFrames: number;
  /** Long tasks (> 50 ms) reported by the browser. */
  longTasks: number;
  /** Snapshots ingested. */
  snapshots: number;
  /** Time spent in React commits of the dashboard, per commit, ms. */
  commitP95Ms: number;
  commitMaxMs: number;
  commits: number;
}

declare global {
  interface Window {
    __afdBench?: BenchResult;
  }
}

const pct = (sorted: number[], p: number): number => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0;

export function mountBench(root: HTMLElement): void {
  const params = new URLSearchParams(window.location.search);
  const durationMs = Number(params.get('ms') ?? 10_000);
  const store = createMetricsStore(null);
  const gen = new SyntheticMetrics({ attentionRanks: 4, ffnRanks: 4, numLayers: 48, numStages: 2 });
  let snapshots = 0;
  const commitTimes: number[] = [];
  let flushT0 = 0;

  function Bench() {
    const model = useStore(store, (s) => s.model);
    const version = useStore(store, (s) => s.version);
    // Layout effects run right after React commits: store change -> committed DOM.
    useLayoutEffect(() => {
      if (flushT0 > 0) commitTimes.push(performance.now() - flushT0);
      flushT0 = 0;
    }, [version]);
    return (
      <div className="app-main" style={{ height: '100%' }}>
        <h2>Dashboard benchmark: 10 Hz x 8 ranks x 48 layers x 2 stages</h2>
        <DashboardView model={model} version={version} heatmapWindow="window" />
      </div>
    );
  }

  // Measure commit cost: from the store fold to the committed DOM.
  const origFlush = store.getState().flush;
  store.setState({
    flush: () => {
      flushT0 = performance.now();
      origFlush();
    },
  });

  createRoot(root).render(<Bench />);
  const feed = setInterval(() => {
    const snaps = gen.tick(Date.now());
    snapshots += snaps.length;
    store.getState().ingest(snaps, 'bench');
  }, 100);

  let longTasks = 0;
  try {
    new PerformanceObserver((list) => (longTasks += list.getEntries().length)).observe({ type: 'longtask', buffered: false });
  } catch {
    // longtask entries not supported: counted as 0
  }
  const gaps: number[] = [];
  let last = 0;
  const start = performance.now() + 1000; // skip the first second (mount, first layout)
  const frame = (t: number): void => {
    if (t >= start) {
      if (last > 0) gaps.push(t - last);
      last = t;
    }
    if (t - start < durationMs) {
      requestAnimationFrame(frame);
      return;
    }
    clearInterval(feed);
    const sorted = [...gaps].sort((a, b) => a - b);
    const commits = [...commitTimes].sort((a, b) => a - b);
    window.__afdBench = {
      durationMs,
      frames: gaps.length,
      frameP50Ms: pct(sorted, 50),
      frameP95Ms: pct(sorted, 95),
      frameP99Ms: pct(sorted, 99),
      frameMaxMs: sorted[sorted.length - 1] ?? 0,
      missedFrames: gaps.filter((g) => g > 25).length,
      longTasks,
      snapshots,
      commitP95Ms: pct(commits, 95),
      commitMaxMs: commits[commits.length - 1] ?? 0,
      commits: commits.length,
    };
    document.title = 'bench done';
  };
  requestAnimationFrame(frame);
}
