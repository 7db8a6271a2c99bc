/**
 * Sampling settings of the chat on screen (its own, or the defaults): temperature, top-p,
 * top-k, max tokens, seed, min-p, the presence, frequency and repetition penalties, stop
 * strings, and the token view (log-probabilities with top alternatives). Values at the
 * API's default are not sent; invalid values are reported when sending.
 */
import { useEffect, useState } from 'react';
import { useChat } from '../AppContext.js';
import { activeConversation } from '../stores/chatStore.js';
import { effectiveSettings } from '../stores/chatSettings.js';
import { parseStopText, stopText } from '../stores/stopStrings.js';

/** Alternatives per token the token view asks for. */
export const TOKEN_VIEW_TOP = 5;

function num(v: string): number {
  return v.trim() === '' ? Number.NaN : Number(v);
}

/** Stop strings, one a line; the text stays as typed while it means the same list. */
function StopStrings({ stop, onChange }: { stop: readonly string[]; onChange(stop: string[]): void }) {
  const [text, setText] = useState(() => stopText(stop));
  const key = JSON.stringify(stop);
  useEffect(() => {
    // Another chat's settings (or the defaults) came on screen: show its list.
    if (JSON.stringify(parseStopText(text)) !== key) setText(stopText(stop));
  }, [key]);
  return (
    <label className="stop-strings" title="One stop string a line; \n is a newline, \t a tab, \\ a backslash. The reply ends before the first one it writes.">
      Stop strings (one a line)
      <textarea
        rows={2}
        value={text}
        placeholder={'e.g. END or \\n\\n'}
        onChange={(e) => {
          setText(e.target.value);
          onChange(parseStopText(e.target.value));
        }}
        data-testid="stop-strings"
      />
    </label>
  );
}

export function SamplingControls() {
  const s = useChat((st) => effectiveSettings(activeConversation(st), st).sampling);
  const set = useChat((st) => st.setSampling);
  return (
    <fieldset className="panel row sampling" style={{ alignItems: 'flex-end' }}>
      <legend>Sampling</legend>
      <label>
        Temperature
        <input type="number" step={0.1} min={0} max={2} value={s.temperature} onChange={(e) => set({ temperature: num(e.target.value) })} data-testid="temperature" />
      </label>
      <label>
        Top-p
        <input type="number" step={0.05} min={0} max={1} value={s.topP} onChange={(e) => set({ topP: num(e.target.value) })} />
      </label>
      <label>
        Top-k (0 = off)
        <input type="number" min={0} value={s.topK} onChange={(e) => set({ topK: num(e.target.value) })} />
      </label>
      <label>
        Max tokens
        <input type="number" min={1} value={s.maxTokens} onChange={(e) => set({ maxTokens: num(e.target.value) })} data-testid="max-tokens" />
      </label>
      <label>
        Seed (empty = random)
        <input type="number" min={0} value={s.seed ?? ''} onChange={(e) => set({ seed: e.target.value.trim() === '' ? null : num(e.target.value) })} />
      </label>
      <label title="Drop tokens below min-p times the most likely token's probability (vLLM's min_p)">
        Min-p (0 = off)
        <input type="number" step={0.01} min={0} max={1} value={s.minP} onChange={(e) => set({ minP: num(e.target.value) })} data-testid="min-p" />
      </label>
      <label title="Subtracted once from the logit of every token already in the reply, -2..2">
        Presence penalty
        <input type="number" step={0.1} min={-2} max={2} value={s.presencePenalty} onChange={(e) => set({ presencePenalty: num(e.target.value) })} data-testid="presence-penalty" />
      </label>
      <label title="Subtracted from a token's logit per time it is already in the reply, -2..2">
        Frequency penalty
        <input type="number" step={0.1} min={-2} max={2} value={s.frequencyPenalty} onChange={(e) => set({ frequencyPenalty: num(e.target.value) })} data-testid="frequency-penalty" />
      </label>
      <label title="Tokens of the prompt and reply: positive logits divided by it, negative multiplied (vLLM's repetition_penalty)">
        Repetition penalty (1 = off)
        <input type="number" step={0.05} min={0} value={s.repetitionPenalty} onChange={(e) => set({ repetitionPenalty: num(e.target.value) })} data-testid="repetition-penalty" />
      </label>
      <StopStrings stop={s.stop} onChange={(stop) => set({ stop })} />
      <label className="inline" title={`Ask for each reply token's log-probability and its top ${TOKEN_VIEW_TOP} alternatives, and show the reply token by token (hover a token for them)`}>
        <input type="checkbox" checked={s.topLogprobs !== null} onChange={(e) => set({ topLogprobs: e.target.checked ? TOKEN_VIEW_TOP : null })} data-testid="token-view-toggle" />
        <span>Token view (logprobs)</span>
      </label>
    </fieldset>
  );
}
