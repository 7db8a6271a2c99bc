/**
 * The Playground's tools (chat only): a JSON list of OpenAI function tools checked as it
 * is typed (empty = none), a sample list, the tool choice (auto, none, required or one of
 * the functions) and whether the model may make several calls at once.
 */
import { useId, useMemo } from 'react';
import { useChat } from '../AppContext.js';
import { parseToolsText, SAMPLE_TOOLS, TOOL_CHOICE_MODES } from '../stores/toolSettings.js';

export function ToolsControls() {
  const t = useChat((s) => s.tools);
  const set = useChat((s) => s.setTools);
  const errorId = useId();
  const parsed = useMemo(() => parseToolsText(t.toolsText), [t.toolsText]);
  const names = parsed.ok ? parsed.value.map((x) => x.function.name) : [];
  const hasTools = parsed.ok && names.length > 0;
  const stale = !(TOOL_CHOICE_MODES as readonly string[]).includes(t.toolChoice) && !names.includes(t.toolChoice);
  const error = !parsed.ok ? parsed.error : hasTools && stale ? `the tool choice names ${t.toolChoice}, which is not in the list: pick another` : null;
  return (
    <fieldset className="panel request-box" data-testid="tools">
      <legend>Tools</legend>
      <div className="row" style={{ alignItems: 'flex-end' }}>
        <label>
          Tool choice
          <select value={t.toolChoice} onChange={(e) => set({ toolChoice: e.target.value })} disabled={!hasTools}>
            {TOOL_CHOICE_MODES.map((m) => (
              <option key={m} value={m}>
                {m}
              </option>
            ))}
            {names.map((n) => (
              <option key={`fn:${n}`} value={n}>
                function: {n}
              </option>
            ))}
            {stale && <option value={t.toolChoice}>function: {t.toolChoice} (not in the list)</option>}
          </select>
        </label>
        <label className="inline">
          <input type="checkbox" checked={t.parallelToolCalls} onChange={(e) => set({ parallelToolCalls: e.target.checked })} disabled={!hasTools} />
          <span style={{ color: 'var(--text)' }}>Parallel tool calls</span>
        </label>
        <button className="btn small" onClick={() => set({ toolsText: SAMPLE_TOOLS })}>
          Sample tools
        </button>
      </div>
      <label>
        Functions (a JSON list; empty = no tools)
        <textarea
          className="mono code-box"
          rows={8}
          spellCheck={false}
          value={t.toolsText}
          onChange={(e) => set({ toolsText: e.target.value })}
          aria-invalid={error !== null}
          aria-describedby={errorId}
          placeholder='[{"type": "function", "function": {"name": "...", "parameters": {...}}}]'
        />
      </label>
      <div id={errorId} className={error ? 'field-error' : 'muted small'} role={error ? 'alert' : undefined} data-testid="tools-status">
        {error ?? (hasTools ? `${names.length === 1 ? '1 function' : `${names.length} functions`}: ${names.join(', ')}` : 'No tools: the request carries none.')}
      </div>
    </fieldset>
  );
}
