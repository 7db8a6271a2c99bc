/**
 * One tool call of a reply: the function name, its arguments pretty-printed once they are
 * whole JSON (as they stream, the text so far), and the call id; while the call waits for
 * a result, a small form to type it (Enter sends it, Shift+Enter a new line).
 */
import { useState, type KeyboardEvent } from 'react';
import { prettyArguments, type StreamedToolCall } from '../../common/toolCallStream.js';

export interface ToolCallCardProps {
  call: StreamedToolCall;
  /** Sends the result; resolves false when it was not taken (the form keeps the text). Absent: no form. */
  onAnswer?: ((text: string) => Promise<boolean>) | undefined;
  /** Whether the form may send now (no reply running). */
  canAnswer?: boolean;
}

export function ToolCallCard({ call, onAnswer, canAnswer = true }: ToolCallCardProps) {
  const [text, setText] = useState('');
  const name = call.name || '…';
  const args = prettyArguments(call.arguments);
  const send = async (): Promise<void> => {
    if (!onAnswer || !canAnswer) return;
    if (await onAnswer(text)) setText('');
  };
  const onKey = (e: KeyboardEvent<HTMLTextAreaElement>): void => {
    if (e.key === 'Enter' && !e.shiftKey) {
      e.preventDefault();
      void send();
    }
  };
  return (
    <section className="tool-call" aria-label={`Tool call ${name}`} data-testid="tool-call" data-name={call.name} data-call-id={call.id}>
      <div className="row small">
        <span className="badge info">call</span>
        <strong className="mono" data-testid="tool-call-name">
          {name}
        </strong>
        <span className="spacer" />
        <span className="muted mono" title="call id" data-testid="tool-call-id">
          {call.id || '…'}
        </span>
      </div>
      <pre className="tool-call-args mono" aria-label={`Arguments of ${name}`} data-testid="tool-call-args">
        {args || '{}'}
      </pre>
      {onAnswer && (
        <div className="tool-call-answer">
          <label>
            {`Result of ${name} (${call.id})`}
            <textarea rows={2} value={text} onChange={(e) => setText(e.target.value)} onKeyDown={onKey} placeholder='e.g. {"temperature_c": 18}' data-testid="tool-result-input" />
          </label>
          <button className="btn small primary" onClick={() => void send()} disabled={!canAnswer} aria-label={`Send the result of ${name}`} data-testid="tool-result-send">
            Send result
          </button>
        </div>
      )}
    </section>
  );
}
