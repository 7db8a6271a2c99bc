/**
 * Live metrics: snapshots pushed per rank (~10 Hz each) are queued and folded into the
 * DashboardModel on a fixed 100 ms tick, so the Dashboard re-renders at most 10 times a
 * second however many ranks report. A new launch id resets the model.
 */
import { createStore, type StoreApi } from 'zustand/vanilla';
import type { MetricsSnapshot } from '@afd/shared';
import type { RendererBridge } from '../bridge/types.js';
import { DashboardModel, type HeatmapWindow } from '../../common/dashboardModel.js';

export interface MetricsState {
  model: DashboardModel;
  /** Bumped on every fold; components select it to re-render. */
  version: number;
  launchId: string | null;
  /** Renderer clock (epoch ms) of the last fold that brought data; null before any. */
  lastDataAtMs: number | null;
  /** Byte heatmaps: cumulative or trailing window. */
  heatmapWindow: HeatmapWindow;
  /** Pause folding (the view freezes; data keeps arriving and is dropped). */
  paused: boolean;
  setHeatmapWindow(w: HeatmapWindow): void;
  setPaused(p: boolean): void;
  /** Folds queued snapshots now (the tick calls this). */
  flush(): void;
  /** Adds snapshots directly (benchmarks and tests). */
  ingest(snapshots: MetricsSnapshot[], launchId: string): void;
}

export interface MetricsStoreOptions {
  /** Fold period, ms (default 100). */
  tickMs?: number;
  /** Start the fold timer (default true; tests drive flush() themselves). */
  autoTick?: boolean;
}

export function createMetricsStore(bridge: RendererBridge | null, opts: MetricsStoreOptions = {}): StoreApi<MetricsState> {
  let queue: MetricsSnapshot[] = [];
  const store = createStore<MetricsState>()((set, get) => ({
    model: new DashboardModel(),
    version: 0,
    launchId: null,
    lastDataAtMs: null,
    heatmapWindow: 'window',
    paused: false,
    setHeatmapWindow: (heatmapWindow) => set({ heatmapWindow, version: get().version + 1 }),
    setPaused: (paused) => set({ paused }),
    flush() {
      if (queue.length === 0) return;
      const batch = queue;
      queue = [];
      if (get().paused) return;
      const model = get().model;
      model.ingest(batch);
      set({ version: model.version, lastDataAtMs: Date.now() });
    },
    ingest(snapshots, launchId) {
      const s = get();
      if (s.launchId !== launchId) {
        s.model.reset();
        queue = [];
        set({ launchId });
      }
      queue.push(...snapshots);
    },
  }));
  bridge?.on('metrics.snapshot', (p) => store.getState().ingest([p.snapshot], p.launchId));
  if (opts.autoTick !== false) setInterval(() => store.getState().flush(), opts.tickMs ?? 100);
  return store;
}
