/**
 * The token view of a reply: each token as the model produced it, shaded by its
 * probability (the lighter the shade, the surer the model; unlikely tokens stand out in
 * red), with its log-probability and the top alternatives at that position on hover.
 */
import type { ChatTokenLogprob } from '@afd/shared';

/** "12.3%" for a log-probability (natural log). */
export function percentOf(logprob: number): string {
  const p = Math.exp(logprob) * 100;
  return p >= 99.95 ? '100%' : p >= 0.1 ? `${p.toFixed(1)}%` : `${p.toPrecision(2)}%`;
}

/** A token as it reads in a tooltip: quoted, with whitespace made visible. */
export function shownToken(token: string): string {
  return JSON.stringify(token);
}

/** The hover text of one token: its probability and logprob, then the alternatives, best first. */
export function tokenTitle(t: ChatTokenLogprob): string {
  const head = `${shownToken(t.token)}  ${percentOf(t.logprob)}  (logprob ${t.logprob.toFixed(3)})`;
  if (t.top.length === 0) return head;
  const rows = t.top.map((a) => `${a.token === t.token ? '▸' : ' '} ${shownToken(a.token)}  ${percentOf(a.logprob)}`);
  return [head, 'top alternatives:', ...rows].join('\n');
}

/** Background of a token: transparent when certain, up to a strong red when improbable. */
function shade(logprob: number): string {
  const p = Math.min(1, Math.max(0, Math.exp(logprob)));
  return `rgba(220, 80, 60, ${(0.6 * (1 - p)).toFixed(3)})`;
}

export function TokenView({ tokens }: { tokens: readonly ChatTokenLogprob[] }) {
  return (
    <div className="content token-view" data-testid="token-view">
      {tokens.map((t, i) => (
        <span key={i} className="tok" style={{ background: shade(t.logprob) }} title={tokenTitle(t)} data-testid="token" data-logprob={t.logprob}>
          {t.token}
        </span>
      ))}
    </div>
  );
}
