/** Sampling settings of the chat on screen (its own, or the defaults); invalid values are reported when sending. */
import { useChat } from '../AppContext.js';
import { activeConversation } from '../stores/chatStore.js';
import { effectiveSettings } from '../stores/chatSettings.js';

function num(v: string): number {
  return v.trim() === '' ? Number.NaN : Number(v);
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
    </fieldset>
  );
}
