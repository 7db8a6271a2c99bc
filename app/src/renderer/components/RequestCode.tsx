/**
 * The request the next send would make, as curl or Python (openai package) code, with a
 * copy button: the body the console sends (structured output, tools and tool results
 * included), built only while the panel is open.
 */
import { useMemo, useState } from 'react';
import { useShallow } from 'zustand/react/shallow';
import { openaiRequestBody } from '../../common/openaiRequestBody.js';
import { useChat, useLaunch } from '../AppContext.js';
import { copyText } from '../lib/clipboard.js';
import { MODEL_PLACEHOLDER, requestCode, type CodeLanguage } from '../../common/requestCode.js';
import { activeConversation } from '../stores/chatStore.js';
import { effectiveSettings } from '../stores/chatSettings.js';
import { isLive } from '../stores/conversations.js';
import { previewRequest } from '../stores/previewRequest.js';

const LANGUAGES: { id: CodeLanguage; label: string }[] = [
  { id: 'curl', label: 'curl' },
  { id: 'python', label: 'Python' },
];

function RequestCodeBody({ draft }: { draft: string }) {
  const [language, setLanguage] = useState<CodeLanguage>('curl');
  const [copied, setCopied] = useState(false);
  // Finished messages only: a streaming reply does not re-render the code on every token.
  const messages = useChat(useShallow((s) => activeConversation(s).messages.filter((m) => !isLive(m))));
  const settings = useChat(useShallow((s) => ({ mode: s.mode, ...effectiveSettings(activeConversation(s), s), responseFormat: s.responseFormat, tools: s.tools })));
  const modelId = useChat((s) => s.servedModelId);
  const baseUrl = useLaunch((s) => s.progress?.routerUrl ?? null);
  const preview = useMemo(() => previewRequest(settings, messages, draft), [settings, messages, draft]);
  const code = useMemo(
    () => requestCode(language, openaiRequestBody(preview.request, modelId ?? MODEL_PLACEHOLDER), { baseUrl: baseUrl ?? 'http://127.0.0.1:8000', modelKnown: modelId !== null }),
    [language, preview, modelId, baseUrl],
  );
  const copy = async (): Promise<void> => {
    setCopied(await copyText(code));
    setTimeout(() => setCopied(false), 1500);
  };
  return (
    <>
      <div className="row">
        <div role="radiogroup" aria-label="Code language" className="row">
          {LANGUAGES.map((l) => (
            <label key={l.id} className="inline">
              <input type="radio" name="code-language" checked={language === l.id} onChange={() => setLanguage(l.id)} />
              <span style={{ color: 'var(--text)' }}>{l.label}</span>
            </label>
          ))}
        </div>
        <span className="spacer" />
        <button className="btn small" onClick={() => void copy()} aria-label="Copy the request code" data-testid="request-code-copy">
          {copied ? 'Copied' : 'Copy'}
        </button>
      </div>
      {!baseUrl && <p className="muted small">No topology is running: the address shown is an example.</p>}
      {preview.problem && <p className="muted small" data-testid="request-code-problem">{preview.problem}</p>}
      <pre className="log request-code" aria-label="Request code" data-testid="request-code">
        {code}
      </pre>
    </>
  );
}

export function RequestCode({ draft }: { draft: string }) {
  const [open, setOpen] = useState(false);
  return (
    <details className="panel" onToggle={(e) => setOpen(e.currentTarget.open)} data-testid="request-code-panel">
      <summary>Request as code</summary>
      {open && <RequestCodeBody draft={draft} />}
    </details>
  );
}
