/**
 * The Playground's composer, pinned under the conversation: the message (chat) or prompt
 * (raw completion) box, Send with the reason it is off beside it (no topology running,
 * ...), Stop (Esc) and Clear.
 */
import type { KeyboardEvent } from 'react';
import type { ChatMode } from '../stores/chatStore.js';

export interface ComposerProps {
  mode: ChatMode;
  text: string;
  onText(text: string): void;
  onSend(): void;
  onStop(): void;
  onClear(): void;
  /** Why a send cannot start now (no topology running, ...); null when it can. */
  blockedReason: string | null;
  /** A reply is being generated (in any chat): Send waits, Stop stops it. */
  replying: boolean;
  canClear: boolean;
}

export function Composer({ mode, text, onText, onSend, onStop, onClear, blockedReason, replying, canClear }: ComposerProps) {
  const onKey = (e: KeyboardEvent<HTMLTextAreaElement>): void => {
    if (e.key === 'Enter' && !e.shiftKey) {
      e.preventDefault();
      if (blockedReason === null) onSend();
    } else if (e.key === 'Escape' && replying) {
      e.preventDefault();
      onStop();
    }
  };
  return (
    <div className="composer" data-testid="composer">
      <label className="composer-input">
        {mode === 'chat' ? 'Message (Enter sends, Shift+Enter new line, Esc stops)' : 'Raw completion prompt (Enter sends, Esc stops)'}
        <textarea data-testid="chat-input" rows={3} value={text} onChange={(e) => onText(e.target.value)} onKeyDown={onKey} placeholder={mode === 'chat' ? 'Ask something…' : 'Once upon a time'} />
      </label>
      <div className="composer-actions">
        <div className="row">
          <button className="btn primary" onClick={onSend} disabled={replying || blockedReason !== null} aria-describedby={blockedReason ? 'send-blocked' : undefined} data-testid="chat-send">
            Send
          </button>
          <button className="btn danger" onClick={onStop} disabled={!replying} data-testid="chat-stop">
            Stop
          </button>
          <button className="btn" onClick={onClear} disabled={!canClear} title="Empty this chat">
            Clear
          </button>
        </div>
        {blockedReason && (
          <span className="send-blocked small" id="send-blocked" role="status" data-testid="send-blocked">
            Send is off: {blockedReason}
          </span>
        )}
      </div>
    </div>
  );
}
