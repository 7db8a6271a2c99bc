/**
 * Playground: chat or raw completion against the running topology, streamed, with
 * sampling settings, a stop button, and per-message TTFT / decode rate / inter-token
 * latency kept with each message; a running reply shows its elapsed clock and stage.
 */
import { useEffect, useRef, useState, type KeyboardEvent } from 'react';
import { useShallow } from 'zustand/react/shallow';
import { useChat, useLaunch } from '../AppContext.js';
import { Banner } from '../components/Banner.js';
import { finishedReplyStats, MessageTimingsChart } from '../components/MessageTimingsChart.js';
import { ModelHeader } from '../components/ModelHeader.js';
import { SamplingControls } from '../components/SamplingControls.js';
import { formatClock, formatMs, formatRate } from '../lib/format.js';
import type { ChatMessage } from '../stores/chatStore.js';
import type { ScreenProps } from './types.js';

function ElapsedClock({ since }: { since: number }) {
  const [now, setNow] = useState(() => performance.now());
  useEffect(() => {
    const t = setInterval(() => setNow(performance.now()), 100);
    return () => clearInterval(t);
  }, []);
  return (
    <span className="mono" data-testid="elapsed-clock">
      {formatClock(now - since)}
    </span>
  );
}

const STAGE_KIND: Record<ChatMessage['stage'], string> = { queued: 'warn', prefill: 'info', decode: 'info', done: 'ok', stopped: 'warn', error: 'err' };

function Message({ m }: { m: ChatMessage }) {
  const live = m.stage === 'queued' || m.stage === 'prefill' || m.stage === 'decode';
  return (
    <div className={`msg ${m.role}`} data-testid={`msg-${m.role}`} data-stage={m.stage}>
      <div className="role">
        <span>{m.role === 'user' ? (m.mode === 'chat' ? 'you' : 'prompt') : m.mode === 'chat' ? 'assistant' : 'completion'}</span>
        {m.role === 'assistant' && (
          <span className={`badge ${STAGE_KIND[m.stage]}`} data-testid="msg-stage">
            {m.stage}
          </span>
        )}
        {m.role === 'assistant' && live && <ElapsedClock since={m.startedAtMs} />}
      </div>
      <div className="content" data-testid="msg-content">
        {m.content || (live ? <span className="muted">…</span> : '')}
      </div>
      {m.error && <div style={{ color: 'var(--err)', marginTop: 4 }} data-testid="msg-error">{m.error}</div>}
      {m.stats && (
        <div className="stats" data-testid="msg-stats">
          <span title="time to first token">TTFT {formatMs(m.stats.ttftMs)}</span>
          <span title="tokens per second after the first token">decode {formatRate(m.stats.decodeTokensPerSecond)}</span>
          <span title="mean / 95th percentile inter-token latency">
            ITL {formatMs(m.stats.meanItlMs)} / p95 {formatMs(m.stats.p95ItlMs)}
          </span>
          <span>
            {m.stats.numOutputTokens} tokens{m.stats.numPromptTokens !== undefined ? ` (prompt ${m.stats.numPromptTokens})` : ''}
          </span>
          <span>total {formatMs(m.stats.totalMs)}</span>
        </div>
      )}
    </div>
  );
}

export function PlaygroundScreen({ navigate }: ScreenProps) {
  const progress = useLaunch((s) => s.progress);
  const messages = useChat((s) => s.messages);
  // Changes only when a reply finishes (chat.delta keeps every stats object as it is).
  const replyStats = useChat(useShallow((s) => finishedReplyStats(s.messages)));
  const mode = useChat((s) => s.mode);
  const error = useChat((s) => s.error);
  const systemPrompt = useChat((s) => s.systemPrompt);
  const { send, stop, clear, setMode, setSystemPrompt, clearError } = useChat((s) => s);
  const running = messages.some((m) => m.role === 'assistant' && (m.stage === 'queued' || m.stage === 'prefill' || m.stage === 'decode'));
  const [text, setText] = useState('');
  const endRef = useRef<HTMLDivElement>(null);
  const lastContent = messages[messages.length - 1]?.content.length ?? 0;
  useEffect(() => {
    // Block body: newer Chromium returns a Promise from scrollIntoView, which React would take for a cleanup.
    endRef.current?.scrollIntoView({ block: 'end' });
  }, [messages.length, lastContent]);

  const ready = progress?.state === 'running';
  const submit = async (): Promise<void> => {
    if (running) return;
    const t = text;
    setText('');
    await send(t);
  };
  const onKey = (e: KeyboardEvent<HTMLTextAreaElement>): void => {
    if (e.key === 'Enter' && !e.shiftKey) {
      e.preventDefault();
      void submit();
    } else if (e.key === 'Escape' && running) {
      e.preventDefault();
      void stop();
    }
  };

  return (
    <>
      <div className="row">
        <h2>Playground</h2>
        <span className="spacer" />
        <div role="radiogroup" aria-label="Mode" className="row">
          {(['chat', 'completion'] as const).map((m) => (
            <label key={m} className="inline">
              <input type="radio" name="mode" checked={mode === m} onChange={() => setMode(m)} data-testid={`mode-${m}`} />
              <span style={{ color: 'var(--text)' }}>{m === 'chat' ? 'Chat' : 'Raw completion'}</span>
            </label>
          ))}
        </div>
      </div>
      {ready && progress.model && (
        <ModelHeader
          model={progress.model}
          onExample={(m, t) => {
            setMode(m);
            setText(t);
          }}
        />
      )}
      {!ready && (
        <div className="banner warn" role="status" data-testid="playground-not-ready">
          <div className="banner-text">
            {progress
              ? `The topology is ${progress.state}${progress.state === 'launching' ? ': wait until every rank is ready' : ''}.`
              : 'No topology is running. Launch one to chat with it.'}
          </div>
          <button className="btn" onClick={() => navigate(progress ? 'launch' : 'topology')}>
            {progress ? 'Open Launch' : 'Choose a topology'}
          </button>
        </div>
      )}
      <SamplingControls />
      {mode === 'chat' && (
        <label>
          System prompt (optional)
          <input value={systemPrompt} onChange={(e) => setSystemPrompt(e.target.value)} placeholder="You are a helpful assistant." />
        </label>
      )}
      <div className="chat" aria-live="polite" data-testid="chat-log">
        {messages.length === 0 && <p className="muted">Messages and their timings appear here.</p>}
        {messages.map((m) => (
          <Message key={m.id} m={m} />
        ))}
        <div ref={endRef} />
      </div>
      {error && <Banner kind="err" message={error} onDismiss={clearError} testId="chat-error" />}
      <div className="row" style={{ alignItems: 'flex-end' }}>
        <label style={{ flex: 1 }}>
          {mode === 'chat' ? 'Message (Enter sends, Shift+Enter new line, Esc stops)' : 'Prompt (Enter sends, Esc stops)'}
          <textarea data-testid="chat-input" rows={3} value={text} onChange={(e) => setText(e.target.value)} onKeyDown={onKey} placeholder={mode === 'chat' ? 'Ask something…' : 'Once upon a time'} />
        </label>
        <button className="btn primary" onClick={() => void submit()} disabled={running} data-testid="chat-send">
          Send
        </button>
        <button className="btn danger" onClick={() => void stop()} disabled={!running} data-testid="chat-stop">
          Stop
        </button>
        <button className="btn" onClick={clear} disabled={messages.length === 0}>
          Clear
        </button>
      </div>
      <MessageTimingsChart stats={replyStats} />
    </>
  );
}
