/**
 * The Dashboard's expert-load panel: token-expert pairs routed to each expert of every
 * layer (rows: layers; columns: experts), summed over the FFN ranks, plus which FFN rank
 * holds which experts. Counts come from the expert-parallel exchange (the FFN ranks route
 * on the host there); without it the panel says so.
 */
import { memo, useMemo } from 'react';
import { formatBytes } from '../lib/format.js';
import type { DashboardModel, HeatmapWindow } from '../../common/dashboardModel.js';
import { expertLoadGrid, type ExpertLoadGap } from '../stores/expertLoad.js';
import { Heatmap } from './Heatmap.js';

const GAP_TEXT: Record<ExpertLoadGap, string> = {
  'no-ffn-ranks': 'No FFN ranks report yet: expert load is counted by the FFN ranks of an AFD launch.',
  dense: 'The model is dense: it has no routed experts.',
  'not-counted': 'Expert load is counted when expert parallelism is on (Topology → Options → expert parallelism, with two or more FFN ranks).',
};

const formatPairs = (v: number): string => (Number.isFinite(v) ? (v >= 10_000 ? `${(v / 1000).toFixed(0)}k` : v.toFixed(0)) : '–');

export const ExpertHeatmap = memo(function ExpertHeatmap({ model, version, heatmapWindow }: { model: DashboardModel; version: number; heatmapWindow: HeatmapWindow }) {
  // version is the model's change counter: recompute when it moves.
  const { grid, gap } = useMemo(() => expertLoadGrid(model, heatmapWindow), [model, version, heatmapWindow]);
  let hottest = '';
  if (grid) {
    let best = -1;
    grid.values.forEach((v, i) => {
      if (v > best) {
        best = v;
        hottest = best > 0 ? `hottest: layer ${Math.floor(i / grid.numExperts)} expert ${i % grid.numExperts} (${formatPairs(v)} tokens)` : '';
      }
    });
  }
  return (
    <div className="panel" data-testid="panel-experts">
      <h3>Expert load (rows: layers; columns: experts; tokens routed, {heatmapWindow === 'window' ? 'trailing window' : 'since start'})</h3>
      {!grid ? (
        <p className="muted" data-testid="expert-load-empty">
          {GAP_TEXT[gap ?? 'not-counted']}
        </p>
      ) : (
        <>
          <div className="small mono" data-testid="expert-holders">
            {grid.holders.map((h) => (
              <span key={h.label} style={{ marginRight: '1rem' }}>
                {h.label} holds e{h.start}–e{h.end - 1} ({h.end - h.start} of {h.numExperts}
                {Number.isFinite(h.weightBytes) ? `, ${formatBytes(h.weightBytes)} weights` : ''})
              </span>
            ))}
          </div>
          {/* A fixed-size box: the text changes at 10 Hz (see .live in theme.css). */}
          <div className="small muted mono live" style={{ display: 'block', height: '1.45em' }} data-testid="expert-hottest">
            {hottest || 'no tokens routed in this window'}
          </div>
          <Heatmap title="tokens per expert" rows={grid.numLayers} columns={grid.columns} values={grid.values} format={formatPairs} />
        </>
      )}
    </div>
  );
});
