/** The request log, newest first: one row per request; a row opens the request's bodies. */
import type { LoggedRequest } from '@afd/shared';
import { formatMs } from '../lib/format.js';
import { requestKey } from '../stores/requestsStore.js';

export function statusKind(status: number | null): string {
  if (status === null) return 'err';
  return status < 300 ? 'ok' : status < 500 ? 'warn' : 'err';
}

const tokens = (n: number | null): string => (n === null ? '–' : String(n));

export function RequestLogTable({ rows, opened, onOpen }: { rows: readonly LoggedRequest[]; opened: string | null; onOpen: (row: LoggedRequest) => void }) {
  if (rows.length === 0) return <p className="muted" data-testid="requests-empty">No requests yet: they show here as they end (the Playground's included).</p>;
  const newestFirst = [...rows].reverse();
  return (
    <table className="requests-table" data-testid="requests-table">
      <thead>
        <tr>
          <th>Time (UTC)</th>
          <th>Endpoint</th>
          <th>Model</th>
          <th title="prompt / completion tokens">Tokens</th>
          <th>TTFT</th>
          <th>Duration</th>
          <th>Status</th>
          <th>Finish</th>
        </tr>
      </thead>
      <tbody>
        {newestFirst.map((r) => {
          const key = requestKey(r);
          return (
            <tr key={key} className={key === opened ? 'selected' : undefined} onClick={() => onOpen(r)} data-testid="request-row" data-endpoint={r.endpoint}>
              <td className="mono">
                <button className="link" onClick={(e) => { e.stopPropagation(); onOpen(r); }} aria-expanded={key === opened} aria-label={`Request ${r.id} of agent ${r.agentId}: ${r.method} ${r.endpoint}`}>
                  {new Date(r.startedAtMs).toISOString().slice(11, 23)}
                </button>
              </td>
              <td className="mono" data-testid="request-endpoint">
                {r.method === 'POST' ? '' : `${r.method} `}
                {r.endpoint}
                {r.stream && <span className="muted"> (stream)</span>}
              </td>
              <td className="mono ellipsis" data-testid="request-model">{r.model ?? '–'}</td>
              <td className="mono" data-testid="request-tokens">{`${tokens(r.promptTokens)} / ${tokens(r.completionTokens)}`}</td>
              <td className="mono" data-testid="request-ttft">{formatMs(r.ttftMs)}</td>
              <td className="mono" data-testid="request-duration">{formatMs(r.durationMs)}</td>
              <td>
                <span className={`badge ${statusKind(r.status)}`} data-testid="request-status" title={r.error ?? undefined}>
                  {r.status ?? 'none'}
                </span>
              </td>
              <td className="mono" data-testid="request-finish">{r.finishReason ?? '–'}</td>
            </tr>
          );
        })}
      </tbody>
    </table>
  );
}
