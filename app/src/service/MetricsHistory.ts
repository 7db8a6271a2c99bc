/**
 * The console's side of the Dashboard's chart history: folds the current launch's metric
 * snapshots into chart points with the renderer's own DashboardModel (every foldMs of
 * console time, like the renderer's metrics store), and keeps them in a ChartHistory (15
 * minutes, downsampled). A renderer that loads or reloads asks for it (`metrics.history`)
 * and its charts start with the last 15 minutes instead of empty. The history lives here
 * because the console outlives the page and sees every snapshot; one per launch (a new
 * launch id starts it over).
 */
import type { BridgeResponse, MetricsSnapshot } from '@afd/shared';
import { ChartHistory } from '../common/ChartHistory.js';
import { pointRow } from '../common/chartRow.js';
import { DashboardModel } from '../common/dashboardModel.js';

export interface MetricsHistoryOptions {
  /** Fold period, ms (default 100, the renderer's). */
  foldMs?: number;
  /** Console clock, epoch ms (tests pass a fake). */
  now?: () => number;
}

export class MetricsHistory {
  private launchId: string | null = null;
  // One point is all the model needs to keep: the history is the ChartHistory.
  private model = new DashboardModel({ historyPoints: 1 });
  private history = new ChartHistory();
  private queue: MetricsSnapshot[] = [];
  private lastFoldMs = Number.NEGATIVE_INFINITY;
  private readonly foldMs: number;
  private readonly now: () => number;

  constructor(opts: MetricsHistoryOptions = {}) {
    this.foldMs = opts.foldMs ?? 100;
    this.now = opts.now ?? Date.now;
  }

  /** A snapshot of launch `launchId`; one of another launch starts the history over. */
  add(launchId: string, snapshot: MetricsSnapshot): void {
    if (launchId !== this.launchId) {
      this.launchId = launchId;
      this.model = new DashboardModel({ historyPoints: 1 });
      this.history = new ChartHistory();
      this.queue = [];
    }
    this.queue.push(snapshot);
    if (this.now() - this.lastFoldMs >= this.foldMs) this.fold();
  }

  /** The history so far (snapshots still queued folded in), in its wire form. */
  data(): BridgeResponse<'metrics.history'> {
    this.fold();
    return { launchId: this.launchId, history: this.history.toData() };
  }

  private fold(): void {
    if (this.queue.length === 0) return;
    this.model.ingest(this.queue);
    this.queue = [];
    this.lastFoldMs = this.now();
    this.history.push(pointRow(this.model.series.last()!));
  }
}
