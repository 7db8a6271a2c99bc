/** The prefix-cache table and the Dashboard's hit-rate stat rendered to HTML (no DOM here; the e2e specs drive them in Chromium). */
import { renderToStaticMarkup } from 'react-dom/server';
import { describe, expect, it } from 'vitest';
import { DashboardModel, type PrefixCacheRow } from '../../common/dashboardModel.js';
import { ChartHistory } from '../../common/ChartHistory.js';
import { SyntheticMetrics } from '../testing/syntheticMetrics.js';
import { DashboardView } from './DashboardView.js';
import { PrefixCacheTable } from './PrefixCacheTable.js';

function row(label: string, window: [number, number], lifetime: [number, number], blocks: [number, number]): PrefixCacheRow {
  const rate = ([q, h]: [number, number]): number | null => (q > 0 ? h / q : null);
  return {
    label,
    window: { queried: window[0], hit: window[1] },
    windowRate: rate(window),
    lifetime: { queried: lifetime[0], hit: lifetime[1] },
    lifetimeRate: rate(lifetime),
    blocksCached: blocks[0],
    blocksTotal: blocks[1],
  };
}

/** The text of the element with data-testid `id` inside the row `rowId` of `html`. */
function cell(html: string, rowId: string, id: string): string | undefined {
  const tr = new RegExp(`<tr data-testid="${rowId}">(.*?)</tr>`).exec(html)?.[1] ?? '';
  return new RegExp(`data-testid="${id}">([^<]*)<`).exec(tr)?.[1];
}

describe('PrefixCacheTable', () => {
  const a0 = row('A0', [800, 200], [12_000, 3_000], [40, 512]);
  const a1 = row('A1', [0, 0], [4_000, 3_400], [200, 512]);
  const all = row('all', [800, 200], [16_000, 6_400], [240, 1024]);

  it('shows per rank and overall: windowed and lifetime rates, tokens, cached blocks; "–" with no lookups in the window', () => {
    const html = renderToStaticMarkup(<PrefixCacheTable ranks={[a0, a1]} all={all} windowLabel="last 10 s" />);
    expect(html).toContain('<th>Hit rate, last 10 s</th>');
    expect(cell(html, 'prefix-row-A0', 'prefix-window')).toBe('25%');
    expect(cell(html, 'prefix-row-A0', 'prefix-lifetime')).toBe('25%');
    expect(cell(html, 'prefix-row-A0', 'prefix-tokens')).toBe('3000 / 12.0 k');
    expect(cell(html, 'prefix-row-A0', 'prefix-blocks')).toBe('40 / 512');
    expect(cell(html, 'prefix-row-A1', 'prefix-window')).toBe('–');
    expect(cell(html, 'prefix-row-A1', 'prefix-lifetime')).toBe('85%');
    expect(cell(html, 'prefix-row-all', 'prefix-lifetime')).toBe('40%');
    expect(cell(html, 'prefix-row-all', 'prefix-blocks')).toBe('240 / 1024');
    expect(html).not.toContain('NaN');
  });

  it('has no "all" row for one rank, blanks the windowed rates when frozen, and says when no rank reports KV stats', () => {
    const one = renderToStaticMarkup(<PrefixCacheTable ranks={[a0]} all={a0} windowLabel="last 10 s" frozen />);
    expect(one).not.toContain('prefix-row-all');
    expect(cell(one, 'prefix-row-A0', 'prefix-window')).toBe('–');
    expect(cell(one, 'prefix-row-A0', 'prefix-lifetime')).toBe('25%');
    expect(renderToStaticMarkup(<PrefixCacheTable ranks={[]} all={null} windowLabel="last 10 s" />)).toContain('No KV cache stats');
  });
});

describe('DashboardView prefix cache', () => {
  it('shows the windowed hit rate of the synthetic ranks, with the lifetime ratio and cached blocks', () => {
    const model = new DashboardModel();
    const gen = new SyntheticMetrics({ attentionRanks: 2, ffnRanks: 2, numLayers: 2, numStages: 1 });
    for (let i = 1; i <= 20; i++) model.ingest(gen.tick(1000 + i * 100), 1000 + i * 100);
    const html = renderToStaticMarkup(<DashboardView model={model} version={model.version} heatmapWindow="window" history={new ChartHistory()} chartRangeMs={60_000} />);
    // A0 hits 25% and A1 45% of their lookups: 35% together, in the window and since start.
    expect(html).toMatch(/data-testid="stat-prefix">35%</);
    expect(html).toContain('since start 35% · 80 / 1024 blocks cached');
    expect(html).toContain('prefix cache hit rate, last 10 s');
    expect(cell(html, 'prefix-row-A1', 'prefix-window')).toBe('45%');
    const frozen = renderToStaticMarkup(<DashboardView model={model} version={model.version} heatmapWindow="window" history={new ChartHistory()} chartRangeMs={60_000} frozen />);
    expect(frozen).toMatch(/data-testid="stat-prefix">–</);
  });
});
