/** Copy-paste code for the running topology and model: curl, Python and TypeScript (openai packages). */
import { useState } from 'react';
import { serverSnippet, type SnippetLanguage, type SnippetTarget } from '../../common/serverSnippets.js';
import { CopyButton } from './CopyButton.js';

const LANGUAGES: { id: SnippetLanguage; label: string }[] = [
  { id: 'curl', label: 'curl' },
  { id: 'python', label: 'Python' },
  { id: 'typescript', label: 'TypeScript' },
];

export function ServerSnippets({ target }: { target: SnippetTarget }) {
  const [language, setLanguage] = useState<SnippetLanguage>('curl');
  const code = serverSnippet(language, target);
  return (
    <div className="panel" data-testid="server-snippets">
      <div className="row">
        <h3 style={{ margin: 0 }}>Code</h3>
        <div role="radiogroup" aria-label="Snippet language" className="row">
          {LANGUAGES.map((l) => (
            <label key={l.id} className="inline">
              <input type="radio" name="snippet-language" checked={language === l.id} onChange={() => setLanguage(l.id)} data-testid={`snippet-${l.id}`} />
              <span style={{ color: 'var(--text)' }}>{l.label}</span>
            </label>
          ))}
        </div>
        <span className="spacer" />
        <CopyButton text={code} label={`Copy the ${language} code`} testId="server-snippet-copy" />
      </div>
      {language !== 'curl' && <p className="muted small">Needs the openai package ({language === 'python' ? 'pip install openai' : 'npm install openai'}).</p>}
      <pre className="log" aria-label={`${language} code`} data-testid="server-snippet" data-language={language}>
        {code}
      </pre>
    </div>
  );
}
