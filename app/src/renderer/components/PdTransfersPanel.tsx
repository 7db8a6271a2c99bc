/**
 * The Dashboard's "Prefill → attention KV transfers" panel (wPxAyF launches): a matrix
 * prefill rank x attention rank of the KV bytes received (the latest transfer's rate on
 * hover), each prefill rank's served counters, the prompts the attention ranks prefilled
 * themselves by reason, and a table of the links. Renders nothing when no rank reports
 * pd (DashboardView leaves it out then).
 */
import { memo, useMemo } from 'react';
import { countOf } from '@afd/shared';
import type { DashboardModel } from '../../common/dashboardModel.js';
import { pdTransfers } from '../../common/pdTransfers.js';
import { formatBytes, formatCount, formatMs, formatRate } from '../lib/format.js';
import { Heatmap } from './Heatmap.js';

const formatMBps = (bps: number): string => (Number.isFinite(bps) && bps > 0 ? formatRate(bps / 1e6, 'MB/s') : '–');

/** "short 3 · prefill_ranks_down 1", or "none". */
function reasonsText(reasons: Readonly<Record<string, number>>): string {
  const parts = Object.entries(reasons)
    .filter(([, n]) => n > 0)
    .map(([reason, n]) => `${reason.replaceAll('_', ' ')} ${formatCount(n)}`);
  return parts.length > 0 ? parts.join(' · ') : 'none';
}

export const PdTransfersPanel = memo(function PdTransfersPanel({ model, version }: { model: DashboardModel; version: number }) {
  // version is the model's change counter: recompute when it moves.
  const pd = useMemo(() => pdTransfers(model), [model, version]);
  if (!pd) return null;
  const cols = pd.attentionLabels.length;
  const totalTransfers = pd.links.reduce((a, l) => a + l.transfers, 0);
  return (
    <div className="panel" data-testid="panel-pd">
      <h3>Prefill → attention KV transfers (since start)</h3>
      <p className="small muted" data-testid="pd-summary">
        {countOf(totalTransfers, 'prompt')} prefilled on prefill ranks · prefilled on the attention ranks themselves: {reasonsText(pd.localTotals)}
      </p>
      <div className="grid-2">
        <div>
          {cols === 0 || pd.prefillLabels.length === 0 ? (
            <p className="muted" data-testid="pd-no-links">
              No attention rank reports links to prefill ranks yet.
            </p>
          ) : (
            <Heatmap
              title="KV bytes, prefill → attention"
              rows={pd.prefillLabels.length}
              rowLabels={pd.prefillLabels}
              yAxis="prefill rank"
              columns={pd.attentionLabels}
              xAxis="attention rank (receives the KV blocks)"
              values={pd.bytes}
              format={formatBytes}
              cellDetail={(row, col) => `last transfer ${formatMBps(pd.rate[row * cols + col] ?? Number.NaN)}`}
            />
          )}
        </div>
        <div>
          <table className="pd-served" data-testid="pd-served">
            <caption className="small muted">Served per prefill rank</caption>
            <thead>
              <tr>
                <th>Rank</th>
                <th>Prefills</th>
                <th>Failed</th>
                <th>In flight</th>
                <th>KV sent</th>
                <th>Connections</th>
              </tr>
            </thead>
            <tbody>
              {pd.served.length === 0 ? (
                <tr>
                  <td colSpan={6} className="muted">
                    no prefill rank reports yet
                  </td>
                </tr>
              ) : (
                pd.served.map((r) => (
                  <tr key={r.label} data-testid={`pd-served-${r.label}`}>
                    <td className="mono">{r.label}</td>
                    <td className="mono" data-testid="pd-served-prefills">
                      {formatCount(r.served.prefills)}
                    </td>
                    <td className="mono">{formatCount(r.served.failed)}</td>
                    <td className="mono">{formatCount(r.served.inFlight)}</td>
                    <td className="mono">{formatBytes(r.served.bytesSent)}</td>
                    <td className="mono">{formatCount(r.served.connections)}</td>
                  </tr>
                ))
              )}
            </tbody>
          </table>
          <div className="small" style={{ marginTop: '0.5rem' }} data-testid="pd-local">
            <div className="muted">Prefilled locally (by the attention rank), by reason:</div>
            {pd.localPrefills.map((r) => (
              <div key={r.label} className="mono" data-testid={`pd-local-${r.label}`}>
                {r.label}: {reasonsText(r.reasons)}
              </div>
            ))}
          </div>
        </div>
      </div>
      <table className="pd-links" data-testid="pd-links" style={{ marginTop: '0.5rem' }}>
        <thead>
          <tr>
            <th>Link</th>
            <th>Connected</th>
            <th title="peer: the KV is copied from the prefill rank's memory on the same host; tcp: bytes over the socket">Transport</th>
            <th>Transfers</th>
            <th>KV bytes</th>
            <th title="request sent to last byte received, prefill included">Mean transfer</th>
            <th title="the prefill rank's own prefill time">Mean prefill</th>
            <th>Last MB/s</th>
            <th title="times the prefill rank was lost with a prefill in flight">Lost</th>
          </tr>
        </thead>
        <tbody>
          {pd.links.map((l) => (
            <tr key={`${l.prefill}-${l.attention}`} data-testid={`pd-link-${l.prefill}-${l.attention}`}>
              <td className="mono">
                {l.prefill} → {l.attention}
              </td>
              <td>
                <span className={`badge ${l.connected ? 'ok' : 'warn'}`}>{l.connected ? 'connected' : 'not connected'}</span>
              </td>
              <td className="mono" data-testid="pd-link-transport">
                {l.transport}
              </td>
              <td className="mono" data-testid="pd-link-transfers">
                {formatCount(l.transfers)}
              </td>
              <td className="mono">{formatBytes(l.bytes)}</td>
              <td className="mono">{formatMs(l.meanTransferMs)}</td>
              <td className="mono">{formatMs(l.meanPrefillMs)}</td>
              <td className="mono">{formatMBps(l.lastBytesPerSecond)}</td>
              <td className={`mono${l.lost > 0 ? ' warn-text' : ''}`}>{formatCount(l.lost)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
});
