/**
 * Playground: chats (kept across reloads) or raw completions against the running
 * topology, streamed, with sampling settings, a response format and tools (chat), a stop
 * button (Esc), and per-message TTFT / decode rate / inter-token latency kept with each
 * message; replies render as markdown, tool calls as cards that take the user's results,
 * every message can be copied, regenerated or edited and resent, and the next request can
 * be seen as curl or Python code.
 */
import { useMemo, useState, type KeyboardEvent } from 'react';
import { useShallow } from 'zustand/react/shallow';
import { useChat, useLaunch, useLink } from '../AppContext.js';
import { Banner } from '../components/Banner.js';
import { ChatMessageView, type ChatMessageActions } from '../components/ChatMessageView.js';
import { ConversationList } from '../components/ConversationList.js';
import { finishedReplyStats, MessageTimingsChart } from '../components/MessageTimingsChart.js';
import { ModelHeader } from '../components/ModelHeader.js';
import { RequestCode } from '../components/RequestCode.js';
import { ResponseFormatControls } from '../components/ResponseFormatControls.js';
import { ToolsControls } from '../components/ToolsControls.js';
import { SamplingControls } from '../components/SamplingControls.js';
import { notReadyText } from '../lib/launchText.js';
import { useStickToBottom } from '../lib/stickToBottom.js';
import { activeConversation } from '../stores/chatStore.js';
import { isLive } from '../stores/conversations.js';
import { pendingToolCalls } from '../stores/toolTurns.js';
import type { ScreenProps } from './types.js';

export function PlaygroundScreen({ navigate }: ScreenProps) {
  const progress = useLaunch((s) => s.progress);
  const loaded = useLaunch((s) => s.loaded);
  const linkOpen = useLink((s) => s.state === 'open');
  const conversation = useChat((s) => activeConversation(s));
  const messages = conversation.messages;
  // Changes only when a reply finishes (chat.delta keeps every stats object as it is).
  const replyStats = useChat(useShallow((s) => finishedReplyStats(activeConversation(s).messages)));
  const mode = useChat((s) => s.mode);
  const error = useChat((s) => s.error);
  const storageError = useChat((s) => s.storageError);
  const systemPrompt = useChat((s) => s.systemPrompt);
  const anyRunning = useChat((s) => s.running() !== undefined);
  const { send, stop, clear, setMode, setSystemPrompt, clearError, regenerate, editAndResend, answerToolCall } = useChat((s) => s);
  const [text, setText] = useState('');
  const lastContent = messages[messages.length - 1]?.content.length ?? 0;
  const chatBox = useStickToBottom<HTMLDivElement>([lastContent], [messages.length, conversation.id]);

  const running = messages.some((m) => m.role === 'assistant' && isLive(m));
  const actions = useMemo<ChatMessageActions>(
    () => ({ onRegenerate: (id) => void regenerate(id), onEdit: (id, t) => void editAndResend(id, t), onAnswerTool: answerToolCall, canReply: !anyRunning }),
    [regenerate, editAndResend, answerToolCall, anyRunning],
  );
  const pending = useMemo(() => pendingToolCalls(messages), [messages]);
  const answerable = useMemo(() => (pending ? new Set(pending.unanswered.map((c) => c.id)) : undefined), [pending]);
  const notReady = linkOpen ? notReadyText(progress, loaded) : null;
  const submit = async (): Promise<void> => {
    if (anyRunning) return;
    const t = text;
    setText('');
    await send(t);
  };
  const onKey = (e: KeyboardEvent<HTMLTextAreaElement>): void => {
    if (e.key === 'Enter' && !e.shiftKey) {
      e.preventDefault();
      void submit();
    } else if (e.key === 'Escape' && anyRunning) {
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
      {!notReady && progress?.model && (
        <ModelHeader
          model={progress.model}
          onExample={(m, t) => {
            setMode(m);
            setText(t);
          }}
        />
      )}
      {notReady && (
        <div className="banner warn" role="status" data-testid="playground-not-ready">
          <div className="banner-text">{notReady}</div>
          <button className="btn" onClick={() => navigate(progress ? 'launch' : 'topology')}>
            {progress ? 'Open Launch' : 'Choose a topology'}
          </button>
        </div>
      )}
      {storageError && <Banner kind="warn" message={storageError} testId="chat-storage-error" />}
      <div className="playground">
        <ConversationList />
        <div className="playground-main">
          <SamplingControls />
          {mode === 'chat' && (
            <label>
              System prompt (optional)
              <input value={systemPrompt} onChange={(e) => setSystemPrompt(e.target.value)} placeholder="You are a helpful assistant." data-testid="system-prompt" />
            </label>
          )}
          {mode === 'chat' && (
            <div className="request-boxes">
              <ResponseFormatControls />
              <ToolsControls />
            </div>
          )}
          <div className="chat" aria-live="polite" data-testid="chat-log" ref={chatBox.ref} onScroll={chatBox.onScroll} tabIndex={0}>
            {messages.length === 0 && <p className="muted">Messages and their timings appear here.</p>}
            {messages.map((m) => (
              <ChatMessageView key={m.id} m={m} actions={actions} answerable={pending?.assistantId === m.id ? answerable : undefined} />
            ))}
          </div>
          {error && <Banner kind="err" message={error} onDismiss={clearError} testId="chat-error" />}
          <div className="row" style={{ alignItems: 'flex-end' }}>
            <label style={{ flex: 1 }}>
              {mode === 'chat' ? 'Message (Enter sends, Shift+Enter new line, Esc stops)' : 'Prompt (Enter sends, Esc stops)'}
              <textarea data-testid="chat-input" rows={3} value={text} onChange={(e) => setText(e.target.value)} onKeyDown={onKey} placeholder={mode === 'chat' ? 'Ask something…' : 'Once upon a time'} />
            </label>
            <button className="btn primary" onClick={() => void submit()} disabled={anyRunning} data-testid="chat-send">
              Send
            </button>
            <button className="btn danger" onClick={() => void stop()} disabled={!anyRunning} data-testid="chat-stop">
              Stop
            </button>
            <button className="btn" onClick={clear} disabled={messages.length === 0 || running} title="Empty this chat">
              Clear
            </button>
          </div>
          <RequestCode draft={text} />
          <MessageTimingsChart stats={replyStats} />
        </div>
      </div>
    </>
  );
}
