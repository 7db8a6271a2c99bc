/** The Dashboard's wire-time maps rendered to HTML: their legends, empty cells that say why, and DBO-off stages. */
import { renderToStaticMarkup } from 'react-dom/server';
import { describe, expect, it } from 'vitest';
import { ChartHistory } from '../../common/ChartHistory.js';
import { DashboardModel } from '../../common/dashboardModel.js';
import { SyntheticMetrics, type SyntheticOptions } from '../testing/syntheticMetrics.js';
import { DashboardView } from './DashboardView.js';

function render(opts: Partial<SyntheticOptions>): string {
  const model = new DashboardModel();
  const gen = new SyntheticMetrics({ attentionRanks: 1, ffnRanks: 1, numLayers: 2, numStages: 2, ...opts });
  for (let i = 1; i <= 5; i++) model.ingest(gen.tick(1000 + i * 100), 1000 + i * 100);
  return renderToStaticMarkup(<DashboardView model={model} version={model.version} heatmapWindow="total" history={new ChartHistory()} chartRangeMs={60_000} />);
}

/** The HTML of the heatmap titled `title` (up to the next heatmap). */
function map(html: string, title: string): string {
  const at = html.indexOf(`data-testid="heatmap-${title}"`);
  expect(at).toBeGreaterThan(0);
  const next = html.indexOf('class="heatmap"', at);
  return html.slice(at, next > 0 ? next : undefined);
}

describe('DashboardView wire-time maps', () => {
  it('labels a round-trip-only connector: A→F says round trip / 2, F→A says it cannot be timed alone and shows no numbers', () => {
    const html = render({ wireBasis: { a2f: 'round-trip/2', f2a: 'round-trip/2' } });
    const a2f = map(html, 'A→F wire time');
    expect(a2f).toContain('data-note="round trip / 2: ranks on different hosts share no clock');
    expect(a2f).not.toContain('data-testid="heatmap-empty-columns"');
    const f2a = map(html, 'F→A wire time');
    expect(f2a).toContain('data-nonzero="0"');
    expect(f2a).toMatch(/data-testid="heatmap-note">not timeable alone: no clock shared across hosts/);
    expect(f2a).toMatch(/data-testid="heatmap-empty-columns">F0 s0, F0 s1, A0 s0, A0 s1: not timeable alone/);
  });

  it('labels one-way maps and keeps their numbers in both directions', () => {
    const html = render({});
    expect(map(html, 'A→F wire time')).toMatch(/data-testid="heatmap-note">one-way: the attention rank/);
    expect(map(html, 'F→A wire time')).toMatch(/data-testid="heatmap-note">one-way: the FFN rank/);
    expect(map(html, 'F→A wire time')).toContain('data-nonzero="8"');
  });

  it('marks stage s1 unused when DBO is off instead of drawing empty columns', () => {
    const html = render({ dbo: false });
    expect(html).toMatch(/data-testid="dbo-off-stages">Stage s1 unused \(DBO off\) on F0, A0: only s0 runs/);
    expect(map(html, 'A→F wire time')).toContain('data-nonzero="4"'); // 2 layers x (F0 s0, A0 s0)
    expect(html).not.toContain('title="A0 s1"');
    expect(render({ dbo: true })).not.toContain('dbo-off-stages');
  });
});
