/**
 * The Playground's card about the served model (from the topology's /v1/models): its
 * name, parameter count and description, and the example prompts it answers well, each a
 * button that puts the prompt in the composer. The mode stays what the user chose: the
 * examples written for that mode are offered (all of them when none are).
 */
import type { ServedModelInfo } from '@afd/shared';
import { formatParameters } from '../lib/format.js';
import type { ChatMode } from '../stores/chatStore.js';

/** The example prompts to offer in `mode`: those written for it, else every one. */
export function examplesFor(model: Pick<ServedModelInfo, 'examplePrompts'>, mode: ChatMode): ServedModelInfo['examplePrompts'] {
  const own = model.examplePrompts.filter((p) => p.mode === mode);
  return own.length > 0 ? own : model.examplePrompts;
}

export function ModelHeader({ model, mode, onExample }: { model: ServedModelInfo; mode: ChatMode; onExample: (text: string) => void }) {
  const params = formatParameters(model.parameters);
  const examples = examplesFor(model, mode);
  return (
    <div className="panel" data-testid="model-header">
      <div className="row">
        <strong data-testid="model-name">{model.name}</strong>
        {params && <span className="badge info" data-testid="model-parameters">{params}</span>}
      </div>
      {model.description && (
        <p className="muted small model-description" data-testid="model-description">
          {model.description}
        </p>
      )}
      {examples.length > 0 && (
        <div className="row" style={{ marginTop: '0.4rem' }}>
          <span className="muted">Try:</span>
          {examples.map((p) => (
            <button
              key={`${p.mode}:${p.text}`}
              className="btn small"
              onClick={() => onExample(p.text)}
              data-testid="example-prompt"
              title={`Puts this in the ${mode === 'chat' ? 'message' : 'prompt'} box (the mode stays ${mode === 'chat' ? 'chat' : 'raw completion'})`}
            >
              {p.text}
            </button>
          ))}
        </div>
      )}
    </div>
  );
}
