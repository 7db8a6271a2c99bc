/**
 * Live metrics: snapshots pushed per rank (~10 Hz each) are queued and folded into the
 * DashboardModel on a fixed 100 ms tick, so the Dashboard re-renders at most 10 times a
 * second however many ranks report. Each fold's point also goes into the chart history
 * (15 minutes, downsampled), which starts from the console's copy (`metrics.history`) so
 * that a reload keeps the charts. A new launch id resets both.
 */
import { createStore, type StoreApi } from 'zustand/vanilla';
import type { ChartHistoryData, MetricsSnapshot } from '@afd/shared';
import type { RendererBridge } from '../bridge/types.js';
import { DashboardModel, type HeatmapWindow } from '../../common/dashboardModel.js';
import { ChartHistory, type ChartRangeMs, type ChartRow } from '../../common/ChartHistory.js';
import { pointRow } from '../../common/chartRow.js';
import { browserStorage, type KeyValueStorage } from '../lib/persist.js';
import { loadChartRange, saveChartRange } from './chartRange.js';

export interface MetricsState {
  model: DashboardModel;
  /** The charts' points: 15 minutes, downsampled (mutated in place; version says when). */
  history: ChartHistory;
  /** The time range the charts show, ms (remembered in browser storage). */
  chartRangeMs: ChartRangeMs;
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
  setChartRange(rangeMs: ChartRangeMs): void;
  /**
   * Starts the chart history from the console's (older points) plus the points folded here
   * since the page loaded; ignored when it is of another launch than the one shown.
   */
  seedHistory(data: ChartHistoryData, launchId: string | null): void;
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
  /** Where the chart range is remembered (default: this page's localStorage). */
  storage?: KeyValueStorage | null;
}

export function createMetricsStore(bridge: RendererBridge | null, opts: MetricsStoreOptions = {}): StoreApi<MetricsState> {
  let queue: MetricsSnapshot[] = [];
  const storage = opts.storage === undefined ? browserStorage() : opts.storage;
  /** Points folded before the console's history came (then null): they go on top of it. */
  let unseeded: ChartRow[] | null = [];
  const store = createStore<MetricsState>()((set, get) => ({
    model: new DashboardModel(),
    history: new ChartHistory(),
    chartRangeMs: loadChartRange(storage),
    version: 0,
    launchId: null,
    lastDataAtMs: null,
    heatmapWindow: 'window',
    paused: false,
    setHeatmapWindow: (heatmapWindow) => set({ heatmapWindow, version: get().version + 1 }),
    setPaused: (paused) => set({ paused }),
    setChartRange(chartRangeMs) {
      saveChartRange(storage, chartRangeMs);
      set({ chartRangeMs, version: get().version + 1 });
    },
    seedHistory(data, launchId) {
      const s = get();
      if (unseeded === null || launchId === null || (s.launchId !== null && s.launchId !== launchId)) {
        unseeded = null;
        return;
      }
      const history = ChartHistory.fromData(data);
      for (const row of unseeded) history.push(row);
      unseeded = null;
      s.model.version += 1;
      set({ history, launchId, version: s.model.version });
    },
    flush() {
      if (queue.length === 0) return;
      const batch = queue;
      queue = [];
      if (get().paused) return;
      const { model, history } = get();
      model.ingest(batch);
      const row = pointRow(model.series.last()!);
      history.push(row);
      // A history reply slower than a minute is a broken one: keep no more than that.
      if (unseeded && unseeded.length < 600) unseeded.push(row);
      set({ version: model.version, lastDataAtMs: Date.now() });
    },
    ingest(snapshots, launchId) {
      const s = get();
      if (s.launchId !== launchId) {
        s.model.reset();
        s.history.clear();
        if (unseeded) unseeded = [];
        queue = [];
        set({ launchId });
      }
      queue.push(...snapshots);
    },
  }));
  bridge?.on('metrics.snapshot', (p) => store.getState().ingest([p.snapshot], p.launchId));
  bridge
    ?.invoke('metrics.history', {})
    .then((r) => store.getState().seedHistory(r.history, r.launchId))
    .catch((e: unknown) => console.warn(`chart history not loaded from the console (the charts start empty): ${e instanceof Error ? e.message : String(e)}`));
  if (opts.autoTick !== false) setInterval(() => store.getState().flush(), opts.tickMs ?? 100);
  return store;
}
