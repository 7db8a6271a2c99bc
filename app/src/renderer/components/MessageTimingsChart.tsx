/**
 * Per-message timings of the Playground session (TTFT and decode rate of each reply),
 * drawn with recharts: it changes only when a reply finishes, so an SVG chart is fine here.
 * Callers pass `finishedReplyStats` through a shallow-equal selector so that streamed
 * tokens (a new messages array each) do not re-render it.
 */
import { memo } from 'react';
import { Bar, CartesianGrid, ComposedChart, Legend, Line, ResponsiveContainer, Tooltip, XAxis, YAxis } from 'recharts';
import type { ChatMessage } from '../stores/chatStore.js';
import type { MessageStats } from '../lib/streamStats.js';

/** Stats of the finished assistant replies, in order; the same objects while a reply streams. */
export function finishedReplyStats(messages: readonly ChatMessage[]): MessageStats[] {
  return messages.flatMap((m) => (m.role === 'assistant' && m.stats ? [m.stats] : []));
}

export const MessageTimingsChart = memo(function MessageTimingsChart({ stats }: { stats: readonly MessageStats[] }) {
  const rows = stats.map((st, i) => ({ n: i + 1, ttftMs: st.ttftMs ?? null, tokensPerSecond: st.decodeTokensPerSecond ?? null }));
  if (rows.length === 0) return null;
  return (
    <div className="panel" data-testid="message-timings">
      <h3>Replies this session: TTFT (bars, ms) and decode rate (line, tok/s)</h3>
      <div style={{ width: '100%', height: 160 }}>
        <ResponsiveContainer width="100%" height="100%">
          <ComposedChart data={rows} margin={{ top: 4, right: 8, bottom: 0, left: 0 }}>
            <CartesianGrid stroke="#2c323c" strokeDasharray="3 3" />
            <XAxis dataKey="n" stroke="#9aa3b2" fontSize={11} tickFormatter={(n: number) => `#${n}`} />
            <YAxis yAxisId="ms" stroke="#9aa3b2" fontSize={11} width={48} />
            <YAxis yAxisId="tps" orientation="right" stroke="#9aa3b2" fontSize={11} width={48} />
            <Tooltip isAnimationActive={false} contentStyle={{ background: '#1c2027', border: '1px solid #2c323c' }} labelFormatter={(n) => `reply #${String(n)}`} />
            <Legend wrapperStyle={{ fontSize: 12 }} />
            <Bar yAxisId="ms" dataKey="ttftMs" name="TTFT ms" fill="#2f8ff0" maxBarSize={48} isAnimationActive={false} />
            <Line yAxisId="tps" dataKey="tokensPerSecond" name="decode tok/s" stroke="#4cc38a" dot isAnimationActive={false} />
          </ComposedChart>
        </ResponsiveContainer>
      </div>
    </div>
  );
});
