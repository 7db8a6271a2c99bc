/**
 * The Plan screen's mixed cluster: rows of (card kind, GPUs, price per GPU, where its costs
 * come from) and the model a roofline is computed for. Two kinds or more plan that cluster
 * (as `afd-agent plan --gpus h200:2,h100:2 --price h200=3,h100=2`); one kind or none leaves
 * the GPUs field's plan of the loaded profile.
 */
import { CARDS } from '@afd/shared';
import { usePlan } from '../AppContext.js';
import { MODEL_CHOICES, newMixedRow, type MixedRow } from '../plan/mixedLogic.js';

const CARD_NAMES = CARDS.map((c) => c.name);
const numberOrNaN = (v: string): number => (v === '' ? NaN : Number(v));

export function PlanMixedCluster() {
  const mixed = usePlan((s) => s.mixed);
  const profile = usePlan((s) => s.profile);
  const setMixed = usePlan((s) => s.setMixed);
  const setRow = (i: number, patch: Partial<MixedRow>): void => setMixed({ rows: mixed.rows.map((r, j) => (j === i ? { ...r, ...patch } : r)) });
  return (
    <div className="row small" data-testid="plan-mixed">
      <span title="GPUs of several card kinds: which kind serves attention and which the FFN, each priced by the loaded profile or by the roofline of its published figures">Mixed cluster</span>
      {mixed.rows.map((r, i) => (
        <span key={i} className="row" data-testid={`plan-mixed-row-${i}`} style={{ gap: 4, border: '1px solid var(--border)', borderRadius: 6, padding: '2px 4px' }}>
          <input list="plan-card-names" value={r.card} style={{ width: '6.5em' }} aria-label="Card kind" placeholder="card" onChange={(e) => setRow(i, { card: e.target.value })} data-testid={`plan-mixed-card-${i}`} />
          <input type="number" min={1} style={{ width: '4em' }} aria-label="GPUs of this kind" title="GPUs of this kind" value={Number.isNaN(r.gpus) ? '' : r.gpus} onChange={(e) => setRow(i, { gpus: numberOrNaN(e.target.value) })} data-testid={`plan-mixed-gpus-${i}`} />
          <input type="number" min={0} step={0.1} style={{ width: '4.5em' }} aria-label="Price per GPU" title="price of one GPU per unit of time, any currency (the same for every kind); empty: not priced" placeholder="price" value={Number.isNaN(r.price) ? '' : r.price} onChange={(e) => setRow(i, { price: numberOrNaN(e.target.value) })} data-testid={`plan-mixed-price-${i}`} />
          <select value={r.costs} style={{ maxWidth: '8em' }} title={r.costs === 'profile' && profile ? `costs from ${profile.source}` : 'costs from the roofline of the card\'s published figures'} aria-label="Costs of this kind" onChange={(e) => setRow(i, { costs: e.target.value as MixedRow['costs'] })} data-testid={`plan-mixed-costs-${i}`}>
            <option value="roofline">roofline</option>
            <option value="profile" disabled={!profile && r.costs !== 'profile'}>
              {profile ? `profile: ${profile.source}` : 'profile (none loaded)'}
            </option>
          </select>
          <button className="btn" style={{ padding: '0 0.4rem' }} aria-label={`Remove ${r.card || 'this kind'}`} title="Remove this kind" onClick={() => setMixed({ rows: mixed.rows.filter((_, j) => j !== i) })} data-testid={`plan-mixed-remove-${i}`}>
            ×
          </button>
        </span>
      ))}
      <button className="btn" style={{ padding: '0.1rem 0.5rem' }} onClick={() => setMixed({ rows: [...mixed.rows, newMixedRow(mixed.rows, CARD_NAMES)] })} data-testid="plan-mixed-add">
        + card kind
      </button>
      {mixed.rows.length > 0 && (
        <label className="inline" title="the model a roofline is computed for; a measured profile must be of it too">
          Model
          <input list="plan-model-names" value={mixed.model} size={22} onChange={(e) => setMixed({ model: e.target.value })} data-testid="plan-mixed-model" />
        </label>
      )}
      {mixed.rows.length === 1 && <span className="muted">one kind: planned as the GPUs above; add another for a mixed cluster</span>}
      <datalist id="plan-card-names">
        {CARDS.map((c) => (
          <option key={c.name} value={c.name}>
            {c.label}
          </option>
        ))}
      </datalist>
      <datalist id="plan-model-names">
        {[...new Set([...MODEL_CHOICES, ...(profile ? [profile.profile.model.name] : [])])].map((m) => (
          <option key={m} value={m} />
        ))}
      </datalist>
    </div>
  );
}
