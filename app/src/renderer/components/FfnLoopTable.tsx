/** State of the FFN daemon loop of every FFN rank. */
import type { FfnRow } from '../../common/dashboardModel.js';
import { formatMs } from '../lib/format.js';

const STATE_KIND: Record<string, string> = { idle: '', 'waiting-control': 'warn', receiving: 'info', computing: 'ok', sending: 'info' };

export function FfnLoopTable({ rows }: { rows: readonly FfnRow[] }) {
  if (rows.length === 0) return <p className="muted">No FFN ranks in this launch.</p>;
  return (
    <table className="ffn-table">
      <thead>
        <tr>
          <th>Rank</th>
          <th>State</th>
          <th>Layer</th>
          <th>Stage</th>
          <th>Steps served</th>
          <th>Time in state</th>
        </tr>
      </thead>
      <tbody>
        {rows.map((r) => (
          <tr key={r.label} data-testid={`ffn-row-${r.label}`}>
            <td className="mono">{r.label}</td>
            <td>
              <div className="live">
                <span className={`badge ${STATE_KIND[r.loop.state] ?? ''}`}>{r.loop.state}</span>
              </div>
            </td>
            <td className="mono">
              <div className="live">{r.loop.layer ?? '–'}</div>
            </td>
            <td className="mono">
              <div className="live">{r.loop.stage ?? '–'}</div>
            </td>
            <td className="mono">
              <div className="live" data-testid="ffn-steps">
                {r.loop.stepsServed}
              </div>
            </td>
            <td className="mono">
              <div className="live">{formatMs(r.loop.waitingMs)}</div>
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
