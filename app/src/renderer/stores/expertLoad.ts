/**
 * What the expert views draw, from the FFN ranks' snapshots (RankStats.experts): the
 * layers x experts load grid of the Dashboard (token-expert pairs routed to each expert,
 * summed over the FFN ranks, cumulative or over the trailing window) and the experts each
 * running FFN rank holds. Pure data over a DashboardModel.
 */
import type { ExpertStats } from '@afd/shared';
import type { DashboardModel, HeatmapWindow } from '../../common/dashboardModel.js';

/** The experts one running FFN rank holds. */
export interface ExpertHolder {
  /** "F1". */
  label: string;
  /** Experts [start, end) of every MoE layer. */
  start: number;
  end: number;
  numExperts: number;
  expertParallel: boolean;
  /** Weight bytes the rank holds; NaN when unknown. */
  weightBytes: number;
}

/** The Dashboard's expert-load grid: rows = layers, columns = experts (ascending ids). */
export interface ExpertLoadGrid {
  numLayers: number;
  numExperts: number;
  /** Column labels "e0".."e(E-1)". */
  columns: string[];
  /** Row-major [numLayers x numExperts] token-expert pairs. */
  values: Float64Array;
  /** Pairs per layer, summed over experts. */
  perLayer: number[];
  /** Who holds which experts. */
  holders: ExpertHolder[];
}

/** Why there is no grid (for the empty panel); null when there is one. */
export type ExpertLoadGap = 'no-ffn-ranks' | 'dense' | 'not-counted';

function ffnExperts(model: DashboardModel): { label: string; experts: ExpertStats; weightBytes: number }[] {
  const out: { label: string; experts: ExpertStats; weightBytes: number }[] = [];
  for (const label of model.rankLabels()) {
    if (!label.startsWith('F')) continue;
    const s = model.latest(label)?.stats;
    if (s?.experts) out.push({ label, experts: s.experts, weightBytes: s.weightBytes ?? Number.NaN });
  }
  return out;
}

/** The experts every running FFN rank reported holding, in rank order. */
export function expertHolders(model: DashboardModel): ExpertHolder[] {
  return ffnExperts(model).map(({ label, experts: e, weightBytes }) => ({
    label,
    start: e.expertStart,
    end: e.expertEnd,
    numExperts: e.numExperts,
    expertParallel: e.expertParallel,
    weightBytes,
  }));
}

/** The expert-load grid, or why there is none. */
export function expertLoadGrid(model: DashboardModel, mode: HeatmapWindow): { grid: ExpertLoadGrid | null; gap: ExpertLoadGap | null } {
  const labels = model.rankLabels().filter((l) => l.startsWith('F'));
  if (labels.length === 0) return { grid: null, gap: 'no-ffn-ranks' };
  const ranks = ffnExperts(model);
  if (ranks.length === 0) return { grid: null, gap: 'dense' };
  const counted = ranks.filter((r) => r.experts.tokensPerExpert.length > 0);
  if (counted.length === 0) return { grid: null, gap: 'not-counted' };
  const numExperts = Math.max(...counted.map((r) => r.experts.numExperts));
  const numLayers = Math.max(...counted.map((r) => r.experts.tokensPerExpert.length));
  const values = new Float64Array(numLayers * numExperts);
  for (const r of counted) {
    const base = mode === 'window' ? model.windowBaseline(r.label)?.stats.experts?.tokensPerExpert : undefined;
    r.experts.tokensPerExpert.forEach((row, l) =>
      row.forEach((v, e) => {
        // A smaller value means the rank restarted: count from zero again.
        const before = base?.[l]?.[e] ?? 0;
        values[l * numExperts + e]! += v >= before ? v - before : v;
      }),
    );
  }
  const perLayer = Array.from({ length: numLayers }, (_, l) => values.subarray(l * numExperts, (l + 1) * numExperts).reduce((a, b) => a + b, 0));
  const columns = Array.from({ length: numExperts }, (_, e) => `e${e}`);
  return { grid: { numLayers, numExperts, columns, values, perLayer, holders: expertHolders(model) }, gap: null };
}
