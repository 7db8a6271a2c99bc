/** One logged request opened: its error, its request body and its response (a stream's text and events). */
import type { LoggedRequest, RequestDetail } from '@afd/shared';
import { formatBytes } from '../lib/format.js';
import { CopyButton } from './CopyButton.js';

/** A JSON body indented for reading; anything else (a stream, a cut body) as it is. */
export function readableBody(body: string): string {
  if (body === '') return '(empty)';
  try {
    return JSON.stringify(JSON.parse(body), null, 2);
  } catch {
    return body;
  }
}

function Body({ title, text, bytes, testId }: { title: string; text: string; bytes: number | null; testId: string }) {
  return (
    <div>
      <div className="row">
        <h3 style={{ margin: 0 }}>{title}</h3>
        {bytes !== null && <span className="muted small">{formatBytes(bytes)}</span>}
        <span className="spacer" />
        <CopyButton text={text} label={`Copy the ${title.toLowerCase()}`} />
      </div>
      <pre className="log" style={{ maxHeight: '40vh' }} data-testid={testId}>
        {text}
      </pre>
    </div>
  );
}

export function RequestDetailView({ row, detail, error, onClose }: { row: LoggedRequest; detail: RequestDetail | null; error: string | null; onClose: () => void }) {
  return (
    <div className="panel" data-testid="request-detail" aria-label={`Request ${row.id}`}>
      <div className="row">
        <h3 style={{ margin: 0 }}>
          {row.method} {row.endpoint} · agent {row.agentId}
          {row.backend !== null ? ` · serving rank ${row.backend}` : ''}
        </h3>
        <span className="spacer" />
        <button className="btn small" onClick={onClose} data-testid="request-detail-close">
          Close
        </button>
      </div>
      {row.error && <p className="small" style={{ color: 'var(--err)' }} data-testid="request-error">{row.error}</p>}
      {error && <p className="small" style={{ color: 'var(--err)' }}>{error}</p>}
      {!detail && !error && <p className="muted">Loading…</p>}
      {detail && (
        <div className="grid-2">
          <Body title="Request body" text={readableBody(detail.requestBody)} bytes={detail.requestBytes} testId="request-body" />
          <div style={{ display: 'flex', flexDirection: 'column', gap: '0.75rem', minWidth: 0 }}>
            {detail.responseText !== null && <Body title="Streamed text" text={detail.responseText || '(no text)'} bytes={null} testId="response-text" />}
            <Body title={detail.responseText !== null ? 'Response events' : 'Response body'} text={readableBody(detail.responseBody)} bytes={detail.responseBytes} testId="response-body" />
          </div>
        </div>
      )}
    </div>
  );
}
