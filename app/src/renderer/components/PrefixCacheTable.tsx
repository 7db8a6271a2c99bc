/**
 * The prefix cache of every KV-holding (attention or colocated) rank, and of all of them
 * together when there are several: hit rate over the trailing window and since the rank
 * started, the tokens behind the latter, and the cached blocks out of all KV blocks.
 */
import type { PrefixCacheRow } from '../../common/dashboardModel.js';
import { formatCount, formatPercent } from '../lib/format.js';

export interface PrefixCacheTableProps {
  ranks: readonly PrefixCacheRow[];
  all: PrefixCacheRow | null;
  /** The trailing window in words, e.g. "last 10 s". */
  windowLabel: string;
  /** The numbers are history: the windowed rates show "–". */
  frozen?: boolean;
}

/** A cell whose text changes at 10 Hz: in a fixed-size, contained box (theme.css `.live`). */
function LiveCell({ testId, text }: { testId: string; text: string }) {
  return (
    <td className="mono">
      <div className="live" data-testid={testId}>
        {text}
      </div>
    </td>
  );
}

export function PrefixCacheTable({ ranks, all, windowLabel, frozen = false }: PrefixCacheTableProps) {
  if (ranks.length === 0) return <p className="muted">No KV cache stats: no attention or colocated rank reports them yet.</p>;
  const rows = all && ranks.length > 1 ? [...ranks, all] : ranks;
  return (
    <table className="prefix-table">
      {/* Fixed layout: the token counts ("12.3 k / 45.6 k") get the widest column. */}
      <colgroup>
        <col style={{ width: '9%' }} />
        <col style={{ width: '15%' }} />
        <col style={{ width: '15%' }} />
        <col style={{ width: '37%' }} />
        <col style={{ width: '24%' }} />
      </colgroup>
      <thead>
        <tr>
          <th>Rank</th>
          <th>Hit rate, {windowLabel}</th>
          <th>Hit rate, since start</th>
          <th>Tokens hit / queried</th>
          <th>Cached / total blocks</th>
        </tr>
      </thead>
      <tbody>
        {rows.map((r) => (
          <tr key={r.label} data-testid={`prefix-row-${r.label}`}>
            <td className="mono">{r.label}</td>
            <LiveCell testId="prefix-window" text={frozen ? '–' : formatPercent(r.windowRate)} />
            <LiveCell testId="prefix-lifetime" text={formatPercent(r.lifetimeRate)} />
            <LiveCell testId="prefix-tokens" text={`${formatCount(r.lifetime.hit)} / ${formatCount(r.lifetime.queried)}`} />
            <LiveCell testId="prefix-blocks" text={`${formatCount(r.blocksCached)} / ${formatCount(r.blocksTotal)}`} />
          </tr>
        ))}
      </tbody>
    </table>
  );
}
