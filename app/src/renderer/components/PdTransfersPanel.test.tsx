/** The Dashboard's PD section from RankStats fixtures (built with the shared schema): the prefill x attention matrix, the links table, local-prefill reasons, served counters; hidden without pd. */
import { renderToStaticMarkup } from 'react-dom/server';
import { describe, expect, it } from 'vitest';
import { emptyRankStats, metricsSnapshotSchema, type MetricsSnapshot, type PdStats, type RankStats } from '@afd/shared';
import { ChartHistory } from '../../common/ChartHistory.js';
import { DashboardModel } from '../../common/dashboardModel.js';
import { pdTransfers } from '../../common/pdTransfers.js';
import { DashboardView } from './DashboardView.js';

const MiB = 2 ** 20;
const noServed = { prefills: 0, failed: 0, inFlight: 0, bytesSent: 0, connections: 0 };

function snapshot(role: RankStats['role'], rank: number, pd?: PdStats): MetricsSnapshot {
  const stats = { ...emptyRankStats(role, rank, 2, 1), steps: 3, ...(pd ? { pd } : {}) };
  const serving = role === 'attention' ? { runningRequests: 0, waitingRequests: 0, promptTokensTotal: 10, generationTokensTotal: 4, requestsFinishedTotal: 1, outputTokensPerSecond: 0, kvUsage: 0 } : null;
  return metricsSnapshotSchema.parse({ timestampMs: 1000, stats, serving });
}

/** 2P2A1F: A0 got 2 prompts from P0 and 1 from P1 (lost once), A1 one from P1; P1 is down for A1. */
function pdModel(): DashboardModel {
  const link = (prefillRank: number, transfers: number, bytes: number, patch: Partial<PdStats['links'][number]> = {}): PdStats['links'][number] => ({
    prefillRank,
    connected: true,
    transfers,
    bytes,
    transferMs: transfers * 40,
    prefillMs: transfers * 30,
    lastBytesPerSecond: transfers > 0 ? 250e6 : 0,
    lost: 0,
    transport: 'tcp',
    ...patch,
  });
  const model = new DashboardModel();
  model.ingest([
    snapshot('ffn', 0),
    snapshot('attention', 0, { links: [link(0, 2, 8 * MiB, { transport: 'peer' }), link(1, 1, 4 * MiB, { lost: 1 })], localPrefills: { short: 3, prefill_ranks_down: 0 }, served: noServed }),
    snapshot('attention', 1, { links: [link(0, 0, 0), link(1, 1, 4 * MiB, { connected: false })], localPrefills: { short: 1, prefill_ranks_down: 2 }, served: noServed }),
    snapshot('prefill', 0, { links: [], localPrefills: {}, served: { prefills: 2, failed: 0, inFlight: 1, bytesSent: 8 * MiB, connections: 2 } }),
    snapshot('prefill', 1, { links: [], localPrefills: {}, served: { prefills: 2, failed: 1, inFlight: 0, bytesSent: 8 * MiB, connections: 1 } }),
  ]);
  return model;
}

const render = (model: DashboardModel): string =>
  renderToStaticMarkup(<DashboardView model={model} version={model.version} heatmapWindow="total" history={new ChartHistory()} chartRangeMs={60_000} />);

/** The text of the cell with data-testid `id` in the row `rowId`. */
function cell(html: string, rowId: string, id: string): string | undefined {
  const tr = new RegExp(`<tr data-testid="${rowId}">(.*?)</tr>`).exec(html)?.[1] ?? '';
  return new RegExp(`data-testid="${id}">([^<]*)<`).exec(tr)?.[1];
}

describe('PD transfers on the Dashboard', () => {
  it('builds the prefill x attention matrix and the link rows from the attention ranks', () => {
    const pd = pdTransfers(pdModel())!;
    expect(pd.prefillLabels).toEqual(['P0', 'P1']);
    expect(pd.attentionLabels).toEqual(['A0', 'A1']);
    expect([...pd.bytes]).toEqual([8 * MiB, 0, 4 * MiB, 4 * MiB]);
    expect(pd.rate[0]).toBe(250e6);
    expect(pd.links.find((l) => l.prefill === 'P0' && l.attention === 'A0')).toMatchObject({ transfers: 2, meanTransferMs: 40, meanPrefillMs: 30 });
    expect(pd.links.find((l) => l.prefill === 'P0' && l.attention === 'A1')?.meanTransferMs).toBeNaN();
    expect(pd.localTotals).toEqual({ short: 4, prefill_ranks_down: 2 });
    expect(pd.served.map((s) => s.label)).toEqual(['P0', 'P1']);
  });

  it('renders the section: heatmap beside the served counters, local reasons, the links table', () => {
    const html = render(pdModel());
    expect(html).toContain('data-testid="panel-pd"');
    expect(html).toContain('Prefill → attention KV transfers');
    expect(html).toMatch(/data-testid="heatmap-KV bytes, prefill → attention" data-nonzero="3" data-rows="2"/);
    expect(html).toContain('attention rank (receives the KV blocks)');
    expect(cell(html, 'pd-link-P0-A0', 'pd-link-transfers')).toBe('2');
    expect(cell(html, 'pd-link-P0-A0', 'pd-link-transport')).toBe('peer');
    expect(cell(html, 'pd-link-P1-A0', 'pd-link-transport')).toBe('tcp');
    const p1a0 = /<tr data-testid="pd-link-P1-A0">(.*?)<\/tr>/.exec(html)?.[1] ?? '';
    expect(p1a0).toContain('4.0 MiB');
    expect(p1a0).toContain('40.0 ms');
    expect(p1a0).toContain('30.0 ms');
    expect(p1a0).toContain('250 MB/s');
    expect(p1a0).toContain('warn-text');
    expect(/<tr data-testid="pd-link-P1-A1">(.*?)<\/tr>/.exec(html)?.[1]).toContain('not connected');
    expect(cell(html, 'pd-served-P1', 'pd-served-prefills')).toBe('2');
    expect(html).toMatch(/data-testid="pd-local-A1">A1: short 1 · prefill ranks down 2</);
    expect(html).toMatch(/data-testid="pd-summary">4 prompts prefilled on prefill ranks · prefilled on the attention ranks themselves: short 4 · prefill ranks down 2/);
    expect(html).not.toContain('NaN');
    // Prefill ranks move nothing between attention and FFN: not in the A↔F maps.
    expect(html).not.toContain('title="P0"');
  });

  it('takes a colocated-engine snapshot that carries pd for the prefill rank it is', () => {
    const model = new DashboardModel();
    const served = { prefills: 5, failed: 0, inFlight: 0, bytesSent: MiB, connections: 1 };
    model.ingest([snapshot('attention', 0, { links: [], localPrefills: {}, served: noServed }), snapshot('colocated', 0, { links: [], localPrefills: {}, served })]);
    expect(model.rankLabels()).toEqual(['A0', 'P0']);
    expect(pdTransfers(model)?.served).toEqual([{ label: 'P0', served }]);
  });

  it('is hidden when no rank reports pd', () => {
    const model = new DashboardModel();
    model.ingest([snapshot('ffn', 0), snapshot('attention', 0)]);
    expect(pdTransfers(model)).toBeNull();
    const html = render(model);
    expect(html).toContain('data-testid="panel-heatmaps"');
    expect(html).not.toContain('panel-pd');
  });
});
