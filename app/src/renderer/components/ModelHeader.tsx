/**
 * The playground's header line about the served model (from the topology's /v1/models):
 * its name, parameter count and description, and the example prompts it answers well,
 * each a button that puts the prompt in the input (switching chat / raw completion).
 */
import type { ServedModelInfo } from '@afd/shared';
import { formatParameters } from '../lib/format.js';

export function ModelHeader({ model, onExample }: { model: ServedModelInfo; onExample: (mode: 'chat' | 'completion', text: string) => void }) {
  const params = formatParameters(model.parameters);
  return (
    <div className="panel" data-testid="model-header">
      <div className="row">
        <strong data-testid="model-name">{model.name}</strong>
        {params && <span className="badge info" data-testid="model-parameters">{params}</span>}
        {model.description && <span className="muted" data-testid="model-description">{model.description}</span>}
      </div>
      {model.examplePrompts.length > 0 && (
        <div className="row" style={{ marginTop: '0.4rem' }}>
          <span className="muted">Try:</span>
          {model.examplePrompts.map((p) => (
            <button key={`${p.mode}:${p.text}`} className="btn" onClick={() => onExample(p.mode, p.text)} data-testid="example-prompt" title={p.mode === 'chat' ? 'chat message' : 'raw completion prompt'}>
              {p.text}
            </button>
          ))}
        </div>
      )}
    </div>
  );
}
