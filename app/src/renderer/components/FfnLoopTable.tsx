/** State of the FFN daemon loop of every FFN rank. */
import type { FfnRow } from '../stores/dashboardModel.js';
import { formatMs } from '../lib/format.js';

const STATE_KIND: Record<string, string> = { idle: '', 'waiting-control': 'warn', receiving: 'info', computing: 'ok', sending: 'info' };

export function FfnLoopTable({ rows }: { rows: readonly FfnRow[] }) {
  if (rows.length === 0) return <p className="muted">No FFN ranks in this launch.</p>;
  return (
    <table>
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
              <span className={`badge ${STATE_KIND[r.loop.state] ?? ''}`}>{r.loop.state}</span>
            </td>
            <td className="mono">{r.loop.layer ?? '–'}</td>
            <td className="mono">{r.loop.stage ?? '–'}</td>
            <td className="mono" data-testid="ffn-steps">
              {r.loop.stepsServed}
            </td>
            <td className="mono">{formatMs(r.loop.waitingMs)}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
