/**
 * The Playground's side panel (a column beside the conversation on wide windows, a drawer
 * over it on narrow ones; open or closed as the user left it): the served model's card
 * with its example prompts, sampling, the system prompt, response format and tools (chat),
 * the next request as code, and the timings of this chat's replies.
 */
import { useShallow } from 'zustand/react/shallow';
import type { ServedModelInfo } from '@afd/shared';
import { useChat } from '../AppContext.js';
import { activeConversation } from '../stores/chatStore.js';
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
  const systemPrompt = useChat((s) => s.systemPrompt);
  const setSystemPrompt = useChat((s) => s.setSystemPrompt);
  // Changes only when a reply finishes (chat.delta keeps every stats object as it is).
  const replyStats = useChat(useShallow((s) => finishedReplyStats(activeConversation(s).messages)));
  return (
    <aside id={id} className="playground-side" aria-label="Model and request settings" data-testid="settings-panel">
      {model && <ModelHeader model={model} mode={mode} onExample={onExample} />}
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
