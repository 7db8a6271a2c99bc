/**
 * Playground: chats (kept across reloads) or raw completions against the running
 * topology, streamed, with a stop button (Esc) and per-message TTFT / decode rate /
 * inter-token latency kept with each message; replies render as markdown, tool calls as
 * cards that take the user's results, every message can be copied, regenerated or edited
 * and resent. The screen fills the window: the conversation scrolls between the chats list
 * and the settings panel (model card, sampling, system prompt, format, tools, the request
 * as code; collapsible, remembered), with the composer pinned under it. The mode is the
 * user's choice alone, and each message shows the mode it was sent in.
 */
import { useMemo, useState } from 'react';
import { useChat, useLaunch, useLink } from '../AppContext.js';
import { Banner } from '../components/Banner.js';
import { ChatMessageView, type ChatMessageActions } from '../components/ChatMessageView.js';
import { Composer } from '../components/Composer.js';
import { ConversationList } from '../components/ConversationList.js';
import { PlaygroundSettings } from '../components/PlaygroundSettings.js';
import { notReadyText, sendBlockedReason } from '../lib/launchText.js';
import { useStickToBottom } from '../lib/stickToBottom.js';
import { useMediaQuery } from '../lib/useMediaQuery.js';
import { activeConversation } from '../stores/chatStore.js';
import { effectiveSettings } from '../stores/chatSettings.js';
import { isLive } from '../stores/conversations.js';
import { pendingToolCalls } from '../stores/toolTurns.js';
import type { ScreenProps } from './types.js';

/** Below this window width (theme.css says the same) the settings panel is a drawer over the conversation, closed unless opened. */
const SIDE_COLUMN_QUERY = '(min-width: 1280px)';

export function PlaygroundScreen({ navigate }: ScreenProps) {
  const progress = useLaunch((s) => s.progress);
  const loaded = useLaunch((s) => s.loaded);
  const linkOpen = useLink((s) => s.state === 'open');
  const conversation = useChat((s) => activeConversation(s));
  const messages = conversation.messages;
  const mode = useChat((s) => s.mode);
  const showTokens = useChat((s) => effectiveSettings(activeConversation(s), s).sampling.topLogprobs !== null);
  const error = useChat((s) => s.error);
  const storageError = useChat((s) => s.storageError);
  const storedPanelOpen = useChat((s) => s.sidePanelOpen);
  const anyRunning = useChat((s) => s.running() !== undefined);
  const { send, stop, clear, setMode, setSidePanelOpen, clearError, regenerate, editAndResend, answerToolCall, continueReply } = useChat((s) => s);
  const [text, setText] = useState('');
  // Until the user opens or closes it, the panel is open where it fits beside the conversation.
  const wide = useMediaQuery(SIDE_COLUMN_QUERY);
  const panelOpen = storedPanelOpen ?? wide;
  const lastContent = messages[messages.length - 1]?.content.length ?? 0;
  const chatBox = useStickToBottom<HTMLDivElement>([lastContent], [messages.length, conversation.id]);

  const notReady = linkOpen ? notReadyText(progress, loaded) : null;
  const blockedReason = sendBlockedReason(progress, loaded, linkOpen);
  const running = messages.some((m) => m.role === 'assistant' && isLive(m));
  const actions = useMemo<ChatMessageActions>(
    () => ({
      onRegenerate: (id) => void regenerate(id),
      onEdit: (id, t) => void editAndResend(id, t),
      onContinue: (id) => void continueReply(id),
      onAnswerTool: answerToolCall,
      canReply: !anyRunning && blockedReason === null,
    }),
    [regenerate, editAndResend, continueReply, answerToolCall, anyRunning, blockedReason],
  );
  const pending = useMemo(() => pendingToolCalls(messages), [messages]);
  const answerable = useMemo(() => (pending ? new Set(pending.unanswered.map((c) => c.id)) : undefined), [pending]);
  const submit = async (): Promise<void> => {
    if (anyRunning || blockedReason !== null) return;
    const t = text;
    setText('');
    await send(t);
  };

  return (
    <div className="playground-screen">
      <div className="row">
        <h2>Playground</h2>
        {!notReady && progress?.model && (
          <span className="muted" data-testid="served-model-name" title="the model the running topology serves">
            {progress.model.name}
          </span>
        )}
        <span className="spacer" />
        <div role="radiogroup" aria-label="Mode" className="row">
          {(['chat', 'completion'] as const).map((m) => (
            <label key={m} className="inline">
              <input type="radio" name="mode" checked={mode === m} onChange={() => setMode(m)} data-testid={`mode-${m}`} />
              <span style={{ color: 'var(--text)' }}>{m === 'chat' ? 'Chat' : 'Raw completion'}</span>
            </label>
          ))}
        </div>
        <button className="btn" aria-expanded={panelOpen} aria-controls="playground-settings" onClick={() => setSidePanelOpen(!panelOpen)} data-testid="settings-toggle">
          {panelOpen ? 'Hide settings' : 'Settings'}
        </button>
      </div>
      {notReady && (
        <div className="banner warn" role="status" data-testid="playground-not-ready">
          <div className="banner-text">{notReady}</div>
          <button className="btn" onClick={() => navigate(progress ? 'launch' : 'topology')}>
            {progress ? 'Open Launch' : 'Choose a topology'}
          </button>
        </div>
      )}
      {storageError && <Banner kind="warn" message={storageError} testId="chat-storage-error" />}
      <div className={`playground${panelOpen ? ' with-side' : ''}`}>
        <ConversationList />
        <div className="playground-main">
          <div className="chat" aria-live="polite" data-testid="chat-log" ref={chatBox.ref} onScroll={chatBox.onScroll} tabIndex={0}>
            {messages.length === 0 && <p className="muted">Messages and their timings appear here.</p>}
            {messages.map((m) => (
              <ChatMessageView key={m.id} m={m} actions={actions} answerable={pending?.assistantId === m.id ? answerable : undefined} showTokens={showTokens} />
            ))}
          </div>
          {error && <Banner kind="err" message={error} onDismiss={clearError} testId="chat-error" />}
        </div>
        <Composer
          mode={mode}
          text={text}
          onText={setText}
          onSend={() => void submit()}
          onStop={() => void stop()}
          onClear={clear}
          blockedReason={blockedReason}
          replying={anyRunning}
          canClear={messages.length > 0 && !running}
        />
        {panelOpen && <PlaygroundSettings id="playground-settings" model={notReady ? null : (progress?.model ?? null)} draft={text} onExample={setText} />}
      </div>
    </div>
  );
}
