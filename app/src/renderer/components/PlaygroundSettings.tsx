/**
 * The Playground's side panel (a column beside the conversation on wide windows, a drawer
 * over it on narrow ones; open or closed as the user left it): the served model's card
 * with its example prompts, sampling and the system prompt (the chat's own, or the defaults
 * for every chat without its own), response format and tools (chat),
 * the next request as code, and the timings of this chat's replies.
 */
import { useShallow } from 'zustand/react/shallow';
import type { ServedModelInfo } from '@afd/shared';
import { useChat } from '../AppContext.js';
import { activeConversation } from '../stores/chatStore.js';
import { effectiveSettings } from '../stores/chatSettings.js';
import { finishedReplyStats, MessageTimingsChart } from './MessageTimingsChart.js';
import { ModelHeader } from './ModelHeader.js';
import { RequestCode } from './RequestCode.js';
import { ResponseFormatControls } from './ResponseFormatControls.js';
import { SamplingControls } from './SamplingControls.js';
import { ToolsControls } from './ToolsControls.js';

export interface PlaygroundSettingsProps {
  id: string;
  /** The served model, when a topology is ready and says. */
  model: ServedModelInfo | null;
  /** The composer's text (for the request shown as code). */
  draft: string;
  onExample(text: string): void;
}

export function PlaygroundSettings({ id, model, draft, onExample }: PlaygroundSettingsProps) {
  const mode = useChat((s) => s.mode);
  const systemPrompt = useChat((s) => effectiveSettings(activeConversation(s), s).systemPrompt);
  const setSystemPrompt = useChat((s) => s.setSystemPrompt);
  const ownSettings = useChat((s) => activeConversation(s).own !== undefined);
  const setOwnSettings = useChat((s) => s.setOwnSettings);
  // Changes only when a reply finishes (chat.delta keeps every stats object as it is).
  const replyStats = useChat(useShallow((s) => finishedReplyStats(activeConversation(s).messages)));
  return (
    <aside id={id} className="playground-side" aria-label="Model and request settings" data-testid="settings-panel">
      {model && <ModelHeader model={model} mode={mode} onExample={onExample} />}
      <label className="inline" title={ownSettings ? 'Unchecked, this chat uses the defaults again' : 'Checked, this chat starts from a copy of the defaults and changes stay with it'}>
        <input type="checkbox" checked={ownSettings} onChange={(e) => setOwnSettings(e.target.checked)} data-testid="chat-own-settings" />
        <span>This chat's own sampling and system prompt</span>
      </label>
      <span className="muted" data-testid="settings-scope">
        {ownSettings ? 'Changes below apply to this chat only.' : 'Changes below are the defaults of every chat without its own.'}
      </span>
      <SamplingControls />
      {mode === 'chat' && (
        <label className="panel">
          System prompt (optional)
          <textarea rows={2} value={systemPrompt} onChange={(e) => setSystemPrompt(e.target.value)} placeholder="You are a helpful assistant." data-testid="system-prompt" />
        </label>
      )}
      {mode === 'chat' && (
        <div className="request-boxes">
          <ResponseFormatControls />
          <ToolsControls />
        </div>
      )}
      <RequestCode draft={draft} />
      <MessageTimingsChart stats={replyStats} />
    </aside>
  );
}
