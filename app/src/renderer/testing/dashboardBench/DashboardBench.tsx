/**
 * Frame benchmark of the Dashboard (index.html?ms=N of the bench build, made and served by
 * app/src/testing/dashboardBench.ts; never part of the console's build): a worker posts
 * synthetic snapshots at 10 Hz from each of 8 ranks (4A4F) x 48 layers x 2 stages as the
 * JSON text of bridge push frames; they go through the real WebSocket bridge (parse,
 * channel check), the real metrics store and the real DashboardView. The charts start with
 * 15 minutes of synthetic history (testing/syntheticHistory) and show the 15-minute range,
 * so every fold redraws the longest window the console offers. The page records
 * animation-frame gaps, React commit times, long tasks and long animation frames, marks
 * the measured span with performance marks `afd-bench-start` / `afd-bench-end` (a trace
 * recorder cuts its profile there) and leaves the results in window.__afdBench.
 */
import { useLayoutEffect } from 'react';
import { createRoot } from 'react-dom/client';
import { useStore } from 'zustand';
import { percentile } from '../../../common/percentile.js';
import { DashboardView } from '../../components/DashboardView.js';
import { createWsBridge, type SocketLike } from '../../bridge/wsBridge.js';
import { createMetricsStore } from '../../stores/metricsStore.js';
import { memoryStorage } from '../../lib/persist.js';
import { syntheticHistory } from '../syntheticHistory.js';
import { summarizeLoafs } from './loafSummary.js';
import type { BenchResult } from './benchResult.js';
import type { FeedStart } from './feed.worker.js';

declare global {
  interface Window {
    __afdBench?: BenchResult;
  }
}

const pct = (sorted: readonly number[], p: number): number => percentile(sorted, p) ?? 0;
const LAUNCH_ID = 'bench';

/** A SocketLike fed by the feed worker: what the bridge sees is what a WebSocket delivers. */
function workerSocket(worker: Worker, onFrame: () => void): SocketLike {
  const socket: SocketLike = {
    readyState: 1,
    send: () => undefined,
    close: () => undefined,
    onopen: null,
    onclose: null,
    onmessage: null,
    onerror: null,
  };
  worker.onmessage = (ev: MessageEvent<string>) => {
    onFrame();
    socket.onmessage?.({ data: ev.data });
  };
  setTimeout(() => socket.onopen?.({}), 0);
  return socket;
}

function observe(type: string, onEntries: (entries: PerformanceEntryList) => void): boolean {
  if (!PerformanceObserver.supportedEntryTypes?.includes(type)) return false;
  new PerformanceObserver((list) => onEntries(list.getEntries())).observe({ type, buffered: false });
  return true;
}

export function mountBench(root: HTMLElement): void {
  const params = new URLSearchParams(window.location.search);
  const durationMs = Number(params.get('ms') ?? 10_000);
  let snapshots = 0;
  let measuring = false;
  const worker = new Worker(new URL('./feed.worker.ts', import.meta.url), { type: 'module' });
  const bridge = createWsBridge({ url: 'ws://bench.invalid/bridge', token: 'bench', connect: () => workerSocket(worker, () => (snapshots += measuring ? 1 : 0)) });
  const store = createMetricsStore(bridge, { storage: memoryStorage() });
  // The charts start 15 minutes full (as the console's history hands them over) and show all of it.
  store.getState().seedHistory(syntheticHistory({ attentionRanks: 4, ffnRanks: 4, minutes: 15, endMs: Date.now() - 100 }), LAUNCH_ID);
  store.getState().setChartRange(900_000);
  const commitTimes: number[] = [];
  let flushT0 = 0;

  function Bench() {
    const model = useStore(store, (s) => s.model);
    const version = useStore(store, (s) => s.version);
    const history = useStore(store, (s) => s.history);
    const chartRangeMs = useStore(store, (s) => s.chartRangeMs);
    // Layout effects run right after React commits: store fold -> committed DOM.
    useLayoutEffect(() => {
      if (flushT0 > 0 && measuring) commitTimes.push(performance.now() - flushT0);
      flushT0 = 0;
    }, [version]);
    return (
      <div className="app-main" style={{ height: '100%' }}>
        <h2>Dashboard benchmark: 10 Hz x 8 ranks x 48 layers x 2 stages, charts over 15 minutes of history</h2>
        <DashboardView model={model} version={version} heatmapWindow="window" history={history} chartRangeMs={chartRangeMs} />
      </div>
    );
  }

  const origFlush = store.getState().flush;
  store.setState({
    flush: () => {
      flushT0 = performance.now();
      origFlush();
    },
  });

  createRoot(root).render(<Bench />);
  const start: FeedStart = { attentionRanks: 4, ffnRanks: 4, numLayers: 48, numStages: 2, hz: 10, launchId: LAUNCH_ID };
  worker.postMessage(start);

  let longTasks = -1;
  let longTaskMaxMs = 0;
  const countLongTasks = (entries: PerformanceEntryList): void => {
    if (!measuring) return;
    longTasks += entries.length;
    for (const e of entries) longTaskMaxMs = Math.max(longTaskMaxMs, e.duration);
  };
  if (observe('longtask', countLongTasks)) longTasks = 0;
  const loafs: PerformanceEntry[] = [];
  const loafSupported = observe('long-animation-frame', (entries) => {
    if (measuring) loafs.push(...entries);
  });

  const gaps: number[] = [];
  let last = 0;
  const t0 = performance.now() + 1000; // skip the first second (mount, first layout)
  const frame = (t: number): void => {
    if (t >= t0) {
      if (!measuring) {
        measuring = true;
        performance.mark('afd-bench-start');
      }
      if (last > 0) gaps.push(t - last);
      last = t;
    }
    if (t - t0 < durationMs) {
      requestAnimationFrame(frame);
      return;
    }
    measuring = false;
    performance.mark('afd-bench-end');
    worker.postMessage('stop');
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
      longTaskMaxMs,
      loaf: loafSupported ? summarizeLoafs(loafs) : null,
      snapshots,
      commitP50Ms: pct(commits, 50),
      commitP95Ms: pct(commits, 95),
      commitMaxMs: commits[commits.length - 1] ?? 0,
      commits: commits.length,
    };
    document.title = 'bench done';
  };
  requestAnimationFrame(frame);
}
