/**
 * Turns the stream of per-rank metric snapshots into what the Dashboard draws: bounded
 * time series (ring buffers), rates derived from cumulative counters, the latest
 * per-layer transfer grids, and the FFN loop table. Pure data; no React, no timers.
 */
import type { FfnLoopStats, MetricsSnapshot } from '@afd/shared';
import { RingBuffer } from './RingBuffer.js';
import { addTokens, hitRate, prefixIncrease, type PrefixTokens } from './prefixCache.js';
import { wireCell, wireLegend, type WireDirection } from './wireMaps.js';
import { compareLabels, rankLabel, snapshotRole } from './rankLabels.js';

export { compareLabels, rankLabel, snapshotRole };

/** One point of the scalar series; t is the snapshot time (epoch ms). */
export interface DashboardPoint {
  tMs: number;
  /** Output tokens per second summed over serving ranks (NaN when no rank reports serving stats). */
  tokensPerSecond: number;
  /** Requests running, summed (NaN without serving stats). */
  running: number;
  /** Requests waiting, summed (NaN without serving stats). */
  waiting: number;
  /** Mean KV usage (0..1) over serving ranks (NaN without serving stats). */
  kvUsage: number;
  /** Last step time per rank label, ms; a rank that did not step in the last IDLE_AFTER_MS is left out (idle, not slow). */
  stepMs: Record<string, number>;
  /** Graph replays per second, summed over ranks. */
  graphHitsPerSecond: number;
  graphMissesPerSecond: number;
  graphCapturesPerSecond: number;
  /** Cumulative hit rate hits / (hits + misses); NaN before any graph step. */
  graphHitRate: number;
  /** Fraction of KV blocks findable by content (prefix cache), over the KV ranks' blocks (NaN without KV stats). */
  kvCached: number;
  /** Prefix-cache hit rate (0..1) of the KV ranks together over the trailing window; NaN when no token was queried in it. */
  prefixHitRate: number;
  /** The same per KV rank label; a rank that queried nothing in the window is left out. */
  prefixHitRateByRank: Record<string, number>;
}

/** Prefix-cache numbers of one KV-holding (attention or colocated) rank, or of all of them. */
export interface PrefixCacheRow {
  /** Rank label, or "all". */
  label: string;
  /** Tokens queried and hit over the trailing window (a rank restart counts from zero, never negative). */
  window: PrefixTokens;
  /** window.hit / window.queried; null when nothing was queried in the window. */
  windowRate: number | null;
  /** Tokens queried and hit since the rank started (the counters as reported). */
  lifetime: PrefixTokens;
  /** lifetime.hit / lifetime.queried; null before the first query. */
  lifetimeRate: number | null;
  /** KV blocks findable by content, and all KV blocks. */
  blocksCached: number;
  blocksTotal: number;
}

/** The per-layer grids the heatmaps show: rows = layers, columns = rank x stage. */
export interface TransferGrids {
  numLayers: number;
  /** Layers whose FFN half is a dense MLP when the model also has MoE layers (from the ranks' stats); [] otherwise or unknown. */
  denseLayers: number[];
  /** Column labels like "A0 s1". */
  columns: string[];
  a2fBytes: Float64Array;
  f2aBytes: Float64Array;
  /** Wire times, NaN where a cell is empty on purpose (wireNotes says why). */
  a2fWireUs: Float64Array;
  f2aWireUs: Float64Array;
  /** Per wire map: what its numbers are (wireMaps.wireLegend). */
  wireLegend: Record<WireDirection, string>;
  /** Per wire map and column: why its cells are empty (undefined where they show numbers). */
  wireNotes: Record<WireDirection, (string | undefined)[]>;
  /** Ranks with DBO off: only their s0 column is shown (s1 never runs); [] when none. */
  dboOffRanks: string[];
}

/** How byte heatmaps aggregate: cumulative since start, or over the trailing window. */
export type HeatmapWindow = 'total' | 'window';

export interface FfnRow {
  label: string;
  loop: FfnLoopStats;
}

export interface DashboardModelOptions {
  /** Scalar series length (points); at 10 Hz, 600 = one minute. */
  historyPoints?: number;
  /** Trailing window for windowed byte grids and the prefix-cache hit rate, ms. */
  windowMs?: number;
}

interface RankHistory {
  label: string;
  /** Recent snapshots (bounded) for windowed deltas. */
  recent: RingBuffer<MetricsSnapshot>;
  /** Snapshot time at which its step count last grew; null before any step. */
  lastStepAtMs: number | null;
}

/** A rank whose step count has not grown for this long is idle: its last step time is history, not its latency. */
export const IDLE_AFTER_MS = 2000;

/** Window of the graph replay rates, ms. */
const RATE_WINDOW_MS = 1000;

export class DashboardModel {
  readonly series: RingBuffer<DashboardPoint>;
  private readonly ranks = new Map<string, RankHistory>();
  /** Trailing window of the windowed byte grids and the prefix-cache hit rate, ms. */
  readonly windowMs: number;
  /** Recent graph totals, for rates over a trailing second (one 100 ms delta is too noisy). */
  private readonly graphHistory = new RingBuffer<{ tMs: number; hits: number; misses: number; captures: number }>(64);
  /** Prefix-cache tokens of each KV rank over the trailing window, as of the last point. */
  private readonly prefixWindow = new Map<string, PrefixTokens>();
  /** Bumped on every ingest so views can memoize on it. */
  version = 0;

  constructor(opts: DashboardModelOptions = {}) {
    this.series = new RingBuffer(opts.historyPoints ?? 600);
    this.windowMs = opts.windowMs ?? 10_000;
  }

  /** Labels of the ranks seen, sorted F.., A.., P.., C... */
  rankLabels(): string[] {
    return [...this.ranks.values()].map((r) => r.label).sort(compareLabels);
  }

  latest(label: string): MetricsSnapshot | undefined {
    return this.ranks.get(label)?.recent.last();
  }

  /** Ingests the snapshots of one tick (any subset of ranks) and appends one series point. */
  ingest(snapshots: readonly MetricsSnapshot[], frameTimeMs?: number): void {
    if (snapshots.length === 0) return;
    for (const s of snapshots) {
      const label = rankLabel(snapshotRole(s.stats), s.stats.rank);
      let h = this.ranks.get(label);
      if (!h) {
        // Enough snapshots to reach back windowMs at up to 20 Hz.
        h = { label, recent: new RingBuffer(Math.ceil(this.windowMs / 50) + 2), lastStepAtMs: null };
        this.ranks.set(label, h);
      }
      const prev = h.recent.last();
      if (prev ? s.stats.steps > prev.stats.steps : s.stats.steps > 0) h.lastStepAtMs = s.timestampMs;
      h.recent.push(s);
    }
    const tMs = frameTimeMs ?? Math.max(...snapshots.map((s) => s.timestampMs));
    this.series.push(this.point(tMs));
    this.version += 1;
  }

  /** Forgets every rank and point (a new launch). */
  reset(): void {
    this.ranks.clear();
    this.series.clear();
    this.graphHistory.clear();
    this.prefixWindow.clear();
    this.version += 1;
  }

  private point(tMs: number): DashboardPoint {
    let tokensPerSecond = 0;
    let running = 0;
    let waiting = 0;
    let kvSum = 0;
    let kvCount = 0;
    let hits = 0;
    let misses = 0;
    let captures = 0;
    let blocksCached = 0;
    let blocksTotal = 0;
    let prefixAll: PrefixTokens = { queried: 0, hit: 0 };
    const prefixHitRateByRank: Record<string, number> = {};
    this.prefixWindow.clear();
    const stepMs: Record<string, number> = {};
    for (const h of this.ranks.values()) {
      const s = h.recent.last();
      if (!s) continue;
      if (h.lastStepAtMs !== null && s.timestampMs - h.lastStepAtMs <= IDLE_AFTER_MS) stepMs[h.label] = s.stats.stepTimeMs.last;
      hits += s.stats.graph.hits;
      misses += s.stats.graph.misses;
      captures += s.stats.graph.captures;
      if (s.serving) {
        tokensPerSecond += s.serving.outputTokensPerSecond;
        running += s.serving.runningRequests;
        waiting += s.serving.waitingRequests;
        kvSum += s.serving.kvUsage;
        kvCount += 1;
      }
      if (s.stats.kv) {
        blocksCached += s.stats.kv.blocksCached;
        blocksTotal += s.stats.kv.blocksTotal;
        const w = this.prefixTokensInWindow(h, s.timestampMs);
        this.prefixWindow.set(h.label, w);
        prefixAll = addTokens(prefixAll, w);
        const rate = hitRate(w);
        if (rate !== null) prefixHitRateByRank[h.label] = rate;
      }
    }
    let graphHitsPerSecond = 0;
    let graphMissesPerSecond = 0;
    let graphCapturesPerSecond = 0;
    this.graphHistory.push({ tMs, hits, misses, captures });
    let base = this.graphHistory.at(0);
    for (let i = 0; i < this.graphHistory.size; i++) {
      const g = this.graphHistory.at(i)!;
      if (tMs - g.tMs <= RATE_WINDOW_MS) {
        base = g;
        break;
      }
    }
    if (base && tMs > base.tMs) {
      const dt = (tMs - base.tMs) / 1000;
      graphHitsPerSecond = Math.max(0, hits - base.hits) / dt;
      graphMissesPerSecond = Math.max(0, misses - base.misses) / dt;
      graphCapturesPerSecond = Math.max(0, captures - base.captures) / dt;
    }
    // No serving stats at all (FFN-only view, or an agent that does not forward them): unknown, not zero.
    const none = kvCount === 0;
    return {
      tMs,
      tokensPerSecond: none ? Number.NaN : tokensPerSecond,
      running: none ? Number.NaN : running,
      waiting: none ? Number.NaN : waiting,
      kvUsage: none ? Number.NaN : kvSum / kvCount,
      stepMs,
      graphHitsPerSecond,
      graphMissesPerSecond,
      graphCapturesPerSecond,
      graphHitRate: hits + misses > 0 ? hits / (hits + misses) : Number.NaN,
      kvCached: blocksTotal > 0 ? blocksCached / blocksTotal : Number.NaN,
      prefixHitRate: hitRate(prefixAll) ?? Number.NaN,
      prefixHitRateByRank,
    };
  }

  /** A rank's prefix-cache tokens over the trailing window ending at its snapshot of nowMs. */
  private prefixTokensInWindow(h: RankHistory, nowMs: number): PrefixTokens {
    const from = this.baselineIndex(h, nowMs);
    if (from < 0) return { queried: 0, hit: 0 };
    const samples: (PrefixTokens | null)[] = [];
    for (let i = from; i < h.recent.size; i++) {
      const kv = h.recent.at(i)?.stats.kv;
      samples.push(kv ? { queried: kv.prefixQueryTokens, hit: kv.prefixHitTokens } : null);
    }
    return prefixIncrease(samples);
  }

  /**
   * The prefix cache of every KV-holding rank, in rank order, and of all of them together
   * (null when no rank reports KV stats): hit rates over the trailing window (from the
   * last point) and since start, and the cached blocks.
   */
  prefixCache(): { ranks: PrefixCacheRow[]; all: PrefixCacheRow | null } {
    const ranks: PrefixCacheRow[] = [];
    for (const label of this.rankLabels()) {
      const kv = this.latest(label)?.stats.kv;
      if (!kv) continue;
      const window = this.prefixWindow.get(label) ?? { queried: 0, hit: 0 };
      const lifetime = { queried: kv.prefixQueryTokens, hit: kv.prefixHitTokens };
      ranks.push({ label, window, windowRate: hitRate(window), lifetime, lifetimeRate: hitRate(lifetime), blocksCached: kv.blocksCached, blocksTotal: kv.blocksTotal });
    }
    if (ranks.length === 0) return { ranks, all: null };
    const zero = { queried: 0, hit: 0 };
    const window = ranks.reduce((a, r) => addTokens(a, r.window), zero);
    const lifetime = ranks.reduce((a, r) => addTokens(a, r.lifetime), zero);
    const all: PrefixCacheRow = {
      label: 'all',
      window,
      windowRate: hitRate(window),
      lifetime,
      lifetimeRate: hitRate(lifetime),
      blocksCached: ranks.reduce((a, r) => a + r.blocksCached, 0),
      blocksTotal: ranks.reduce((a, r) => a + r.blocksTotal, 0),
    };
    return { ranks, all };
  }

  /** Cumulative graph counters summed over ranks (latest snapshots). */
  graphTotals(): { hits: number; misses: number; captures: number } {
    const out = { hits: 0, misses: 0, captures: 0 };
    for (const h of this.ranks.values()) {
      const g = h.recent.last()?.stats.graph;
      if (!g) continue;
      out.hits += g.hits;
      out.misses += g.misses;
      out.captures += g.captures;
    }
    return out;
  }

  /** The FFN loop row of every FFN rank, in rank order. */
  ffnRows(): FfnRow[] {
    const rows: FfnRow[] = [];
    for (const label of this.rankLabels()) {
      const loop = this.latest(label)?.stats.ffnLoop;
      if (loop) rows.push({ label, loop });
    }
    return rows;
  }

  /**
   * The transfer grids over every disaggregated rank (colocated ranks move nothing).
   * Bytes are cumulative ('total') or the increase over the trailing window ('window');
   * wire times are the latest sampled values.
   */
  transferGrids(mode: HeatmapWindow): TransferGrids {
    // Colocated and prefill ranks run whole models: they move nothing between attention and FFN.
    const labels = this.rankLabels().filter((l) => l.startsWith('A') || l.startsWith('F'));
    let numLayers = 0;
    let moeLayers: boolean[] | undefined;
    const columns: string[] = [];
    const dboOffRanks: string[] = [];
    const perRank: { label: string; now: MetricsSnapshot; base: MetricsSnapshot | undefined; stages: number }[] = [];
    for (const label of labels) {
      const h = this.ranks.get(label);
      const now = h?.recent.last();
      if (!h || !now) continue;
      numLayers = Math.max(numLayers, now.stats.numLayers);
      moeLayers ??= now.stats.moeLayers;
      // DBO off: stage s1 never runs, so its column would only ever be empty.
      const stages = now.stats.dbo === false ? Math.min(1, now.stats.numStages) : now.stats.numStages;
      if (stages < now.stats.numStages) dboOffRanks.push(label);
      perRank.push({ label, now, base: mode === 'window' ? this.baseline(h, now.timestampMs) : undefined, stages });
      for (let s = 0; s < stages; s++) columns.push(`${label} s${s}`);
    }
    const cols = columns.length;
    const denseLayers = moeLayers?.some((m) => m) ? moeLayers.flatMap((m, l) => (m ? [] : [l])) : [];
    const grids = {
      numLayers,
      denseLayers,
      columns,
      a2fBytes: new Float64Array(numLayers * cols).fill(Number.NaN),
      f2aBytes: new Float64Array(numLayers * cols).fill(Number.NaN),
      a2fWireUs: new Float64Array(numLayers * cols).fill(Number.NaN),
      f2aWireUs: new Float64Array(numLayers * cols).fill(Number.NaN),
      wireLegend: {
        a2f: wireLegend('a2f', perRank.map((r) => r.now.stats.wireBasis?.a2f)),
        f2a: wireLegend('f2a', perRank.map((r) => r.now.stats.wireBasis?.f2a)),
      },
      wireNotes: { a2f: [] as (string | undefined)[], f2a: [] as (string | undefined)[] },
      dboOffRanks,
    };
    let col = 0;
    for (const { now, base, stages } of perRank) {
      const st = now.stats;
      for (let s = 0; s < stages; s++, col++) {
        for (let l = 0; l < st.numLayers; l++) {
          const i = l * cols + col;
          const minus = (grid: number[][] | undefined): number => grid?.[l]?.[s] ?? 0;
          grids.a2fBytes[i] = Math.max(0, (st.a2fBytes[l]?.[s] ?? 0) - minus(base?.stats.a2fBytes));
          grids.f2aBytes[i] = Math.max(0, (st.f2aBytes[l]?.[s] ?? 0) - minus(base?.stats.f2aBytes));
          const a2f = wireCell('a2f', st.wireBasis?.a2f, st.a2fWireUs[l]?.[s] ?? 0);
          const f2a = wireCell('f2a', st.wireBasis?.f2a, st.f2aWireUs[l]?.[s] ?? 0);
          grids.a2fWireUs[i] = a2f.us;
          grids.f2aWireUs[i] = f2a.us;
          grids.wireNotes.a2f[col] = a2f.note;
          grids.wireNotes.f2a[col] = f2a.note;
        }
      }
    }
    return grids;
  }

  /** The windowed-delta baseline of a rank's latest snapshot (see transferGrids); undefined when none. */
  windowBaseline(label: string): MetricsSnapshot | undefined {
    const h = this.ranks.get(label);
    const now = h?.recent.last();
    return h && now ? this.baseline(h, now.timestampMs) : undefined;
  }

  /** The snapshot windowed deltas start from (see baselineIndex). */
  private baseline(h: RankHistory, nowMs: number): MetricsSnapshot | undefined {
    return h.recent.at(this.baselineIndex(h, nowMs));
  }

  /**
   * Index of the snapshot just before the oldest kept one inside the window (so the deltas
   * span the whole window), or of the oldest when it is already inside; -1 when none is.
   */
  private baselineIndex(h: RankHistory, nowMs: number): number {
    for (let i = 0; i < h.recent.size; i++) {
      const s = h.recent.at(i);
      if (s && nowMs - s.timestampMs <= this.windowMs) return Math.max(0, i - 1);
    }
    return -1;
  }
}
