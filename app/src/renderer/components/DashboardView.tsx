/** The Dashboard's panels over a DashboardModel (also mounted by the frame-time benchmark). */
import { memo, useMemo } from 'react';
import { formatBytes, formatCount, formatMs, formatPercent, formatRate } from '../lib/format.js';
import type { DashboardModel, HeatmapWindow } from '../../common/dashboardModel.js';
import { FULL_RESOLUTION_MS, type ChartHistory } from '../../common/ChartHistory.js';
import { prefixKey, stepKey } from '../../common/chartRow.js';
import { Heatmap } from './Heatmap.js';
import { LiveLineChart, PALETTE, type SeriesDef } from './LiveLineChart.js';
import { chartColumns } from '../stores/chartColumns.js';
import { FfnLoopTable } from './FfnLoopTable.js';
import { PrefixCacheTable } from './PrefixCacheTable.js';
import { ExpertHeatmap } from './ExpertHeatmap.js';
import { PdTransfersPanel } from './PdTransfersPanel.js';

export interface DashboardViewProps {
  model: DashboardModel;
  /** The model's version; props change only when it does. */
  version: number;
  heatmapWindow: HeatmapWindow;
  /** The charts' points (15 minutes, downsampled) and the range they show, ms. */
  history: ChartHistory;
  chartRangeMs: number;
  /** The numbers are history (topology not running, or no recent data): gauges show "–" and panels are dimmed. */
  frozen?: boolean;
}

function Stat({ label, value, testId, detail }: { label: string; value: string; testId: string; detail?: string }) {
  return (
    <div className="panel stat">
      <span className="value live" data-testid={testId}>
        {value}
      </span>
      <span className="label">{label}</span>
      {detail !== undefined && (
        <span className="detail live" title={detail} data-testid={`${testId}-detail`}>
          {detail}
        </span>
      )}
    </div>
  );
}

const formatUs = (us: number): string => formatMs(us / 1000);
const NO_SERVING = 'no serving stats: the attention ranks report none yet';
const NO_GRAPHS = 'no CUDA graph activity (CPU backend, or graphs off)';
const NO_PREFIX = 'no prefix-cache lookups yet (a request is looked up when it is admitted)';
const TPS: SeriesDef[] = [{ key: 'tokensPerSecond', label: 'tokens/s', color: PALETTE[0]!, unit: 'tokens/s' }];
const REQUESTS: SeriesDef[] = [
  { key: 'running', label: 'running', color: PALETTE[1]!, unit: 'requests' },
  { key: 'waiting', label: 'waiting', color: PALETTE[2]!, unit: 'requests' },
];
const KV: SeriesDef[] = [
  { key: 'kvUsage', label: 'in use %', color: PALETTE[4]!, unit: '%' },
  { key: 'kvCached', label: 'cached %', color: PALETTE[5]!, unit: '%' },
];
/** The topology's windowed prefix-cache hit rate; with several KV ranks, one line per rank too (colors other than its own). */
const PREFIX_ALL: SeriesDef = { key: 'prefixHitRate', label: 'all', color: PALETTE[5]!, unit: '%' };
const PREFIX_RANK_COLORS = PALETTE.filter((c) => c !== PREFIX_ALL.color);
const GRAPHS: SeriesDef[] = [
  { key: 'hits', label: 'hits/s', color: PALETTE[1]!, unit: 'replays/s' },
  { key: 'misses', label: 'misses/s', color: PALETTE[3]!, unit: 'replays/s' },
  { key: 'captures', label: 'captures/s', color: PALETTE[2]!, unit: 'captures/s' },
];
const HIT_RATE: SeriesDef[] = [{ key: 'hitRate', label: 'hit rate %', color: PALETTE[5]!, unit: '%' }];
const fmt0 = (v: number): string => v.toFixed(0);
const fmt1 = (v: number): string => v.toFixed(1);
/** Chart columns hold percentages (0-100). */
const fmtPct = (v: number): string => formatPercent(v / 100);

export const DashboardView = memo(function DashboardView({ model, version, heatmapWindow, history, chartRangeMs, frozen = false }: DashboardViewProps) {
  // Numbers, heatmaps and the FFN table follow every fold (10 Hz).
  const d = useMemo(() => {
    const last = model.series.last();
    const stepValues = last ? Object.values(last.stepMs) : [];
    return {
      last,
      meanStepMs: stepValues.length ? stepValues.reduce((a, b) => a + b, 0) / stepValues.length : Number.NaN,
      grids: model.transferGrids(heatmapWindow),
      graph: model.graphTotals(),
      ffn: model.ffnRows(),
      prefix: model.prefixCache(),
    };
    // version is the model's change counter: recompute when it moves.
  }, [model, version, heatmapWindow]);

  // Canvas charts redraw from columns of the range's window, built once per redraw: with
  // every fold at full resolution (the last minute); when a bucket closes for the
  // downsampled ranges (a 15-minute chart moves a tenth of a pixel per fold, not worth a
  // redraw). The legends' newest values follow every fold.
  const bucketMs = history.bucketMsFor(chartRangeMs);
  const redraw = bucketMs > FULL_RESOLUTION_MS ? Math.floor((history.newestMs ?? 0) / bucketMs) : version;
  const latest = useMemo(() => history.latest(), [history, version]);
  const charts = useMemo(() => {
    const { data, stepLabels, prefixLabels } = chartColumns(history.window(chartRangeMs));
    const stepSeries: SeriesDef[] = stepLabels.map((l, i) => ({ key: stepKey(l), label: l, color: PALETTE[i % PALETTE.length]!, unit: 'ms' }));
    const prefixSeries: SeriesDef[] = [
      PREFIX_ALL,
      ...(prefixLabels.length > 1 ? prefixLabels.map((l, i) => ({ key: prefixKey(l), label: l, color: PREFIX_RANK_COLORS[i % PREFIX_RANK_COLORS.length]!, unit: '%' })) : []),
    ];
    return { data, stepSeries, prefixSeries };
    // redraw moves with the model's change counter or the newest bucket: recompute when it does.
  }, [history, chartRangeMs, redraw]);

  const g = d.graph;
  const hitRate = g.hits + g.misses > 0 ? g.hits / (g.hits + g.misses) : Number.NaN;
  // A stopped or silent topology has no current rate, latency or queue: "–", not its last values.
  const live = frozen ? undefined : d.last;
  const idle = live !== undefined && !Number.isFinite(d.meanStepMs);
  const prefixAll = d.prefix.all;
  const prefixWindow = `last ${model.windowMs / 1000} s`;
  return (
    <div className={`dashboard-view${frozen ? ' frozen' : ''}`} data-testid="dashboard-view" data-frozen={frozen}>
      <div className="grid-4">
        <Stat label="output tokens/s" value={formatRate(live?.tokensPerSecond)} testId="stat-tps" />
        <Stat label="step latency (mean of ranks)" value={frozen ? '–' : formatMs(d.meanStepMs)} testId="stat-step" detail={idle ? 'idle: no steps in the last 2 s' : ''} />
        <Stat label="running / waiting requests" value={live && Number.isFinite(live.running) ? `${live.running} / ${live.waiting}` : '–'} testId="stat-requests" />
        <Stat label="KV cache usage" value={formatPercent(live?.kvUsage)} testId="stat-kv" />
        <Stat label="CUDA graph hit rate" value={formatPercent(hitRate)} testId="stat-graph" detail={`${g.hits} hits · ${g.misses} misses · ${g.captures} captures`} />
        <Stat
          label={`prefix cache hit rate, ${prefixWindow}`}
          value={frozen ? '–' : formatPercent(prefixAll?.windowRate)}
          testId="stat-prefix"
          detail={prefixAll ? `since start ${formatPercent(prefixAll.lifetimeRate)} · ${formatCount(prefixAll.blocksCached)} / ${formatCount(prefixAll.blocksTotal)} blocks cached` : 'no KV cache stats'}
        />
      </div>
      <div className="grid-2">
        <div className="panel" data-testid="panel-throughput">
          <LiveLineChart title="Output tokens/s" label="output tokens per second" data={charts.data} latest={latest} series={TPS} format={fmt0} emptyText={NO_SERVING} />
        </div>
        <div className="panel" data-testid="panel-step">
          <LiveLineChart title="Step latency per rank (ms)" label="step latency per rank" data={charts.data} latest={latest} series={charts.stepSeries} format={fmt1} />
        </div>
        <div className="panel" data-testid="panel-kv">
          <LiveLineChart title="KV cache blocks in use and cached (%)" label="KV cache blocks in use and cached" data={charts.data} latest={latest} series={KV} format={fmtPct} emptyText={NO_SERVING} />
        </div>
        <div className="panel" data-testid="panel-prefix">
          <LiveLineChart title={`Prefix cache hit rate, ${prefixWindow} (%)`} label="prefix cache hit rate" data={charts.data} latest={latest} series={charts.prefixSeries} format={fmtPct} emptyText={NO_PREFIX} />
        </div>
        <div className="panel" data-testid="panel-requests">
          <LiveLineChart title="Requests" label="running and waiting requests" data={charts.data} latest={latest} series={REQUESTS} format={fmt0} integerAxis emptyText={NO_SERVING} />
        </div>
        <div className="panel" data-testid="panel-prefix-ranks">
          <h3>Prefix cache per rank (tokens looked up on admission)</h3>
          <PrefixCacheTable ranks={d.prefix.ranks} all={prefixAll} windowLabel={prefixWindow} frozen={frozen} />
        </div>
        <div className="panel" data-testid="panel-graphs">
          <LiveLineChart title="CUDA graph replays per second" label="CUDA graph replays per second" data={charts.data} latest={latest} series={GRAPHS} format={fmt1} />
        </div>
        <div className="panel" data-testid="panel-hitrate">
          <LiveLineChart title="Graph hit rate, cumulative (%)" label="CUDA graph hit rate" data={charts.data} latest={latest} series={HIT_RATE} format={fmt0} emptyText={NO_GRAPHS} />
        </div>
      </div>
      <div className="panel" data-testid="panel-heatmaps">
        <h3>Per-layer transfers (rows: layers; columns: rank × stage)</h3>
        {d.grids.denseLayers.length > 0 && (
          <p className="small muted" data-testid="dense-layers">
            Dense FFN layers: {d.grids.denseLayers.join(', ')} (the others are MoE); every layer crosses the connector.
          </p>
        )}
        {d.grids.dboOffRanks.length > 0 && (
          <p className="small muted" data-testid="dbo-off-stages">
            Stage s1 unused (DBO off) on {d.grids.dboOffRanks.join(', ')}: only s0 runs, so only its column is shown.
          </p>
        )}
        {d.grids.columns.length === 0 ? (
          <p className="muted">No attention/FFN ranks: a colocated run moves no hidden states between ranks.</p>
        ) : (
          <div className="heat-maps" data-testid="heat-maps">
            <Heatmap title="A→F bytes" rows={d.grids.numLayers} columns={d.grids.columns} values={d.grids.a2fBytes} format={formatBytes} />
            <Heatmap title="F→A bytes" rows={d.grids.numLayers} columns={d.grids.columns} values={d.grids.f2aBytes} format={formatBytes} />
            <Heatmap title="A→F wire time" rows={d.grids.numLayers} columns={d.grids.columns} values={d.grids.a2fWireUs} format={formatUs} note={d.grids.wireLegend.a2f} columnNotes={d.grids.wireNotes.a2f} />
            <Heatmap title="F→A wire time" rows={d.grids.numLayers} columns={d.grids.columns} values={d.grids.f2aWireUs} format={formatUs} note={d.grids.wireLegend.f2a} columnNotes={d.grids.wireNotes.f2a} />
          </div>
        )}
      </div>
      <PdTransfersPanel model={model} version={version} />
      <ExpertHeatmap model={model} version={version} heatmapWindow={heatmapWindow} />
      <div className="panel" data-testid="panel-ffn">
        <h3>FFN loop per FFN rank</h3>
        <FfnLoopTable rows={d.ffn} />
      </div>
    </div>
  );
});
