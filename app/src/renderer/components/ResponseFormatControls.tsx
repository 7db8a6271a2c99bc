/**
 * The Playground's response format (chat only): text, any JSON object, or JSON that
 * follows a schema typed in a box that is checked as it is typed, with a sample schema.
 */
import { useId, useMemo } from 'react';
import { useChat } from '../AppContext.js';
import { parseSchemaText, SAMPLE_SCHEMA, schemaNameProblem, type ResponseFormatKind } from '../stores/responseFormat.js';

const KINDS: { kind: ResponseFormatKind; label: string }[] = [
  { kind: 'text', label: 'Text' },
  { kind: 'json_object', label: 'JSON object' },
  { kind: 'json_schema', label: 'JSON schema' },
];

export function ResponseFormatControls() {
  const f = useChat((s) => s.responseFormat);
  const set = useChat((s) => s.setResponseFormat);
  const errorId = useId();
  const schemaError = useMemo(() => {
    if (f.schemaText.trim() === '') return null;
    const r = parseSchemaText(f.schemaText);
    return r.ok ? null : r.error;
  }, [f.schemaText]);
  const nameError = schemaNameProblem(f.schemaName);
  return (
    <fieldset className="panel request-box" data-testid="response-format">
      <legend>Response format</legend>
      <div role="radiogroup" aria-label="Response format" className="row">
        {KINDS.map(({ kind, label }) => (
          <label key={kind} className="inline">
            <input type="radio" name="response-format" checked={f.kind === kind} onChange={() => set({ kind })} />
            <span style={{ color: 'var(--text)' }}>{label}</span>
          </label>
        ))}
      </div>
      {f.kind === 'json_object' && <p className="muted small">The reply is a JSON object (any shape). Say in the message what it should hold.</p>}
      {f.kind === 'json_schema' && (
        <>
          <div className="row" style={{ alignItems: 'flex-end' }}>
            <label>
              Schema name
              <input value={f.schemaName} onChange={(e) => set({ schemaName: e.target.value })} aria-invalid={nameError !== null} />
            </label>
            <button className="btn small" onClick={() => set({ schemaText: SAMPLE_SCHEMA })}>
              Sample schema
            </button>
          </div>
          <label>
            JSON schema (sent with strict: true)
            <textarea
              className="mono code-box"
              rows={8}
              spellCheck={false}
              value={f.schemaText}
              onChange={(e) => set({ schemaText: e.target.value })}
              aria-invalid={schemaError !== null}
              aria-describedby={errorId}
              placeholder='{"type": "object", "properties": {...}}'
            />
          </label>
          <div id={errorId} className={schemaError || nameError ? 'field-error' : 'muted small'} role={schemaError || nameError ? 'alert' : undefined} data-testid="schema-status">
            {nameError ?? schemaError ?? (f.schemaText.trim() === '' ? 'Type a JSON schema, or press "Sample schema".' : 'Valid JSON.')}
          </div>
        </>
      )}
    </fieldset>
  );
}
