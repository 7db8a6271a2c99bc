/**
 * One Playground message: the author, the mode it was sent in (chat or raw completion),
 * and its stage (a stopped reply says "stopped", with the tokens it produced; a reply that
 * called tools says so), the text (assistant replies as markdown; user text and tool
 * results as typed), the reply's tool calls as cards (with a result form on the calls
 * that wait for one), the per-message timings, and its actions: copy, regenerate
 * (replies), continue (replies cut by max tokens), edit and resend (user messages). With
 * the token view on, a reply with log-probabilities shows its tokens (TokenView).
 */
import { memo, useEffect, useState, type KeyboardEvent } from 'react';
import { copyText } from '../lib/clipboard.js';
import { formatClock, formatMs, formatRate } from '../lib/format.js';
import { useThrottledWhileLive } from '../lib/throttledValue.js';
import { isLive } from '../stores/conversations.js';
import { canContinue } from '../stores/continueReply.js';
import type { ChatMessage } from '../stores/chatStore.js';
import { Markdown } from './Markdown.js';
import { TokenView } from './TokenView.js';
import { ToolCallCard } from './ToolCallCard.js';

function ElapsedClock({ since }: { since: number }) {
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    const t = setInterval(() => setNow(Date.now()), 100);
    return () => clearInterval(t);
  }, []);
  return (
    <span className="mono" data-testid="elapsed-clock">
      {formatClock(now - since)}
    </span>
  );
}

const STAGE_KIND: Record<ChatMessage['stage'], string> = { queued: 'warn', prefill: 'info', decode: 'info', done: 'ok', stopped: 'warn', error: 'err' };

function Stats({ m }: { m: ChatMessage }) {
  const s = m.stats!;
  return (
    <div className="stats" data-testid="msg-stats">
      <span title="time to first token">TTFT {formatMs(s.ttftMs)}</span>
      <span title="tokens per second after the first token">decode {formatRate(s.decodeTokensPerSecond)}</span>
      <span title="mean / 95th percentile inter-token latency">
        ITL {formatMs(s.meanItlMs)} / p95 {formatMs(s.p95ItlMs)}
      </span>
      <span data-testid="msg-tokens">
        {s.numOutputTokens} {s.numOutputTokens === 1 ? 'token' : 'tokens'}
        {m.stage === 'stopped' ? ' before the stop' : ''}
        {s.numPromptTokens !== undefined ? ` (prompt ${s.numPromptTokens})` : ''}
      </span>
      <span>total {formatMs(s.totalMs)}</span>
    </div>
  );
}

export interface ChatMessageActions {
  onRegenerate(id: string): void;
  onEdit(id: string, text: string): void;
  /** Asks for more of a reply that max tokens cut. */
  onContinue(id: string): void;
  /** Sends the user's result of a tool call; resolves false when it was not taken. */
  onAnswerTool(assistantId: string, callId: string, text: string): Promise<boolean>;
  /** Whether a new reply may start (none running). */
  canReply: boolean;
}

function whoOf(m: ChatMessage): string {
  if (m.role === 'tool') return 'tool result';
  if (m.role === 'user') return m.mode === 'chat' ? 'you' : 'prompt';
  return m.mode === 'chat' ? 'assistant' : 'completion';
}

export interface ChatMessageViewProps {
  m: ChatMessage;
  actions: ChatMessageActions;
  /** Ids of this reply's tool calls that wait for the user's result (a form each); absent: none. */
  answerable?: ReadonlySet<string> | undefined;
  /** Token view on: a reply that has its tokens' log-probabilities shows them (see TokenView). */
  showTokens?: boolean;
}

export const ChatMessageView = memo(function ChatMessageView({ m, actions, answerable, showTokens = false }: ChatMessageViewProps) {
  const live = isLive(m);
  // A streaming reply re-renders ten times a second, not on every token.
  const shown = useThrottledWhileLive(m.content, live);
  const tokens = useThrottledWhileLive(showTokens ? m.tokens : undefined, live);
  const calls = useThrottledWhileLive(m.toolCalls, live) ?? [];
  const [editing, setEditing] = useState<string | null>(null);
  const [copied, setCopied] = useState(false);
  // Chat replies are markdown; a raw completion's continuation and the user's text show as typed.
  const markdown = m.role === 'assistant' && m.mode === 'chat' && m.content !== '';
  const who = whoOf(m);
  // A reply that only called tools copies its calls, as the API would give them.
  const copyable = m.content !== '' || !m.toolCalls?.length ? m.content : JSON.stringify(m.toolCalls.map((c) => ({ id: c.id, type: 'function', function: { name: c.name, arguments: c.arguments } })), null, 2);
  const copy = async (): Promise<void> => {
    setCopied(await copyText(copyable));
    setTimeout(() => setCopied(false), 1500);
  };
  const onEditKey = (e: KeyboardEvent<HTMLTextAreaElement>): void => {
    if (e.key === 'Escape') {
      e.preventDefault();
      setEditing(null);
    } else if (e.key === 'Enter' && !e.shiftKey && editing !== null) {
      e.preventDefault();
      actions.onEdit(m.id, editing);
      setEditing(null);
    }
  };
  return (
    <div className={`msg ${m.role}`} data-testid={`msg-${m.role}`} data-stage={m.stage}>
      <div className="role">
        <span>{who}</span>
        {m.role !== 'tool' && (
          <span className={`badge mode-${m.mode}`} title={m.mode === 'chat' ? 'sent as a chat (/v1/chat/completions)' : 'sent as a raw completion (/v1/completions)'} data-testid="msg-mode">
            {m.mode === 'chat' ? 'chat' : 'raw completion'}
          </span>
        )}
        {m.role === 'assistant' && (
          <span className={`badge ${STAGE_KIND[m.stage]}`} data-testid="msg-stage">
            {m.stage}
          </span>
        )}
        {m.role === 'assistant' && m.finishReason && m.finishReason !== 'stop' && (
          <span className="badge info" title="why the reply ended (finish_reason)" data-testid="msg-finish">
            {m.finishReason}
          </span>
        )}
        {m.role === 'tool' && m.toolCall && (
          <span className="mono" data-testid="tool-result-of">
            {m.toolCall.name} · {m.toolCall.id}
          </span>
        )}
        {m.role === 'assistant' && live && <ElapsedClock since={m.startedAtMs} />}
        <span className="spacer" />
        {!live && editing === null && (
          <span className="msg-actions">
            <button className="btn small" onClick={() => void copy()} aria-label={`Copy this ${who} message`} data-testid="msg-copy" disabled={copyable === ''}>
              {copied ? 'Copied' : 'Copy'}
            </button>
            {m.role === 'assistant' && (
              <button className="btn small" onClick={() => actions.onRegenerate(m.id)} disabled={!actions.canReply} aria-label="Regenerate this reply" data-testid="msg-regenerate">
                Regenerate
              </button>
            )}
            {canContinue(m) && (
              <button className="btn small" onClick={() => actions.onContinue(m.id)} disabled={!actions.canReply} aria-label="Continue this reply (it stopped at max tokens)" title="It stopped at max tokens: ask for more" data-testid="msg-continue">
                Continue
              </button>
            )}
            {m.role === 'user' && (
              <button className="btn small" onClick={() => setEditing(m.content)} disabled={!actions.canReply} aria-label="Edit and resend this message" data-testid="msg-edit">
                Edit
              </button>
            )}
          </span>
        )}
      </div>
      {editing !== null ? (
        <div className="msg-edit">
          <textarea aria-label="Edited message (Enter resends, Esc cancels)" data-testid="msg-edit-input" rows={3} value={editing} autoFocus onChange={(e) => setEditing(e.target.value)} onKeyDown={onEditKey} />
          <div className="row">
            <button
              className="btn primary small"
              data-testid="msg-resend"
              onClick={() => {
                actions.onEdit(m.id, editing);
                setEditing(null);
              }}
            >
              Resend
            </button>
            <button className="btn small" onClick={() => setEditing(null)}>
              Cancel
            </button>
            <span className="muted small">The replies after this message are replaced.</span>
          </div>
        </div>
      ) : (
        (shown !== '' || calls.length === 0) &&
        (tokens?.length ? (
          <TokenView tokens={tokens} />
        ) : (
          <div className={`content${markdown ? ' rendered' : ''}${m.role === 'tool' ? ' mono' : ''}`} data-testid="msg-content">
            {markdown && shown !== '' ? <Markdown text={shown} /> : shown || (live ? <span className="muted">…</span> : '')}
          </div>
        ))
      )}
      {calls.length > 0 && (
        <div className="tool-calls">
          {calls.map((c) => (
            <ToolCallCard
              key={c.index}
              call={c}
              canAnswer={actions.canReply}
              onAnswer={answerable?.has(c.id) ? (text) => actions.onAnswerTool(m.id, c.id, text) : undefined}
            />
          ))}
          {answerable && answerable.size > 0 && calls.length > 1 && (
            <p className="muted small" data-testid="tool-calls-waiting">
              {answerable.size} of {calls.length} calls wait for a result; the chat continues when each has one.
            </p>
          )}
        </div>
      )}
      {m.error && (
        <div className={m.stage === 'error' ? 'msg-error' : 'muted small'} data-testid="msg-error">
          {m.error}
        </div>
      )}
      {m.stats && <Stats m={m} />}
    </div>
  );
});
