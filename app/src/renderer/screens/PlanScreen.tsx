/**
 * Plan (issue 42): which way to serve on N GPUs, from a cost profile measured by
 * `afd-bench profile`. The same planner as `afd-agent plan` runs on the page (in a worker):
 * the ranking, the reason line, the profile's cost curves, and a button per row that fills
 * the Topology screen's draft with that shape. With two card kinds or more in the mixed
 * cluster's rows it plans that cluster instead (heteroSearch, as `afd-agent plan --gpus
 * h200:8,h100:16`), no profile needed where the kinds are priced by their published figures.
 */
import { useState, type DragEvent } from 'react';
import type { HeteroRow, PlanRow } from '@afd/shared';
import { useAgents, usePlan, useStores } from '../AppContext.js';
import { Banner } from '../components/Banner.js';
import { CurveChart } from '../components/CurveChart.js';
import { PlanAgentProfiles } from '../components/PlanAgentProfiles.js';
import { PlanMixedCluster } from '../components/PlanMixedCluster.js';
import { PlanMixedRanking } from '../components/PlanMixedRanking.js';
import { PlanUseButton } from '../components/PlanUseButton.js';
import { isMixed } from '../plan/mixedLogic.js';
import { linkChoices, notLaunchable, profileCurves, rowLabel, type PlanInputs } from '../plan/planLogic.js';
import type { ScreenProps } from './types.js';

const NUMBER_FIELDS: { key: keyof PlanInputs; label: string; testId: string; step?: number }[] = [
  { key: 'gpus', label: 'GPUs', testId: 'plan-gpus' },
  { key: 'tpotMs', label: 'TPOT target (ms)', testId: 'plan-tpot', step: 0.5 },
  { key: 'context', label: 'Context (tokens)', testId: 'plan-context' },
  { key: 'maxBatch', label: 'Max batch / rank', testId: 'plan-max-batch' },
];

function ProfileSource() {
  const { plan } = useStores();
  const profile = usePlan((s) => s.profile);
  const profileError = usePlan((s) => s.profileError);
  const [over, setOver] = useState(false);
  const load = async (file: File | undefined): Promise<void> => {
    if (file) plan.getState().loadProfile(file.name, await file.text());
  };
  const onDrop = (e: DragEvent<HTMLDivElement>): void => {
    e.preventDefault();
    setOver(false);
    void load(e.dataTransfer.files[0]);
  };
  const p = profile?.profile;
  return (
    <div
      className="plan-drop"
      data-testid="plan-drop"
      data-over={over}
      onDragOver={(e) => {
        e.preventDefault();
        setOver(true);
      }}
      onDragLeave={() => setOver(false)}
      onDrop={onDrop}
      style={{ border: `1px dashed ${over ? 'var(--accent)' : 'var(--border)'}`, borderRadius: 6, padding: '0.5rem 0.75rem' }}
    >
      <div className="row">
        <label className="btn" style={{ margin: 0 }}>
          Open profile…
          <input type="file" accept=".json,application/json" data-testid="plan-file" style={{ display: 'none' }} onChange={(e) => void load(e.target.files?.[0]).finally(() => (e.target.value = ''))} />
        </label>
        <span className="small muted">or drop a JSON file from <span className="mono">afd-bench profile</span> here</span>
      </div>
      <div style={{ marginTop: 4 }}>
        <PlanAgentProfiles />
      </div>
      {p && (
        <div className="small" data-testid="plan-profile" style={{ marginTop: 4 }}>
          <span className="mono">{profile.source}</span>: {p.model.name} on {p.backend} {p.device} ({p.model.numLayers} layers, hidden {p.model.hiddenSize}), measured {p.measuredAt.slice(0, 16).replace('T', ' ')} at {p.commit}
        </div>
      )}
      {profileError && (
        <div style={{ marginTop: 6 }}>
          <Banner kind="err" message={`This file is not a usable profile: ${profileError}`} testId="plan-profile-error" />
        </div>
      )}
    </div>
  );
}

function Inputs() {
  const inputs = usePlan((s) => s.inputs);
  const profile = usePlan((s) => s.profile);
  const setInputs = usePlan((s) => s.setInputs);
  // A mixed cluster counts its GPUs per kind; its GPUs are bounded by no one memory figure.
  const mixed = usePlan((s) => isMixed(s.mixed));
  const off = (key: keyof PlanInputs): boolean => mixed && (key === 'gpus' || key === 'gpuMemGib');
  return (
    <div className="row" style={{ alignItems: 'flex-end', marginTop: '0.5rem' }}>
      {NUMBER_FIELDS.map((f) => (
        <label key={f.key} title={off(f.key) ? 'a mixed cluster counts its GPUs per card kind (below)' : undefined}>
          {f.label}
          <input type="number" min={1} step={f.step ?? 1} style={{ width: '7em' }} disabled={off(f.key)} value={Number.isFinite(inputs[f.key] as number) ? (inputs[f.key] as number) : ''} onChange={(e) => setInputs({ [f.key]: e.target.value === '' ? NaN : Number(e.target.value) })} data-testid={f.testId} />
        </label>
      ))}
      <label title="memory of one GPU: weights + KV per GPU bound the batch (empty: the profile's device memory)">
        GPU memory GiB
        <input type="number" min={1} style={{ width: '6em' }} placeholder="profile" disabled={off('gpuMemGib')} value={Number.isNaN(inputs.gpuMemGib) ? '' : inputs.gpuMemGib} onChange={(e) => setInputs({ gpuMemGib: e.target.value === '' ? NaN : Number(e.target.value) })} data-testid="plan-gpu-mem" />
      </label>
      <label>
        Micro-batches
        <input value={inputs.stages} size={8} onChange={(e) => setInputs({ stages: e.target.value })} data-testid="plan-stages" title="micro-batch counts to try: 1 = none, 2 = DBO" />
      </label>
      <label>
        Link
        <select value={inputs.link} onChange={(e) => setInputs({ link: e.target.value })} data-testid="plan-link">
          {linkChoices(profile?.profile ?? null).map((c) => (
            <option key={c.value} value={c.value}>
              {c.label}
            </option>
          ))}
        </select>
      </label>
      {/* In the same wrapping row: with no kinds given it takes no line of its own (the curves fit under the table at 1920x1080). */}
      <PlanMixedCluster />
    </div>
  );
}

function Ranking({ onUse }: { onUse: (r: PlanRow) => void }) {
  const result = usePlan((s) => s.result);
  // The GPU count the shown result was planned for (the field may already say another).
  const gpus = usePlan((s) => s.resultInputs?.gpus ?? s.inputs.gpus);
  const memory = usePlan((s) => s.resultMemory);
  if (!result) return null;
  const winner = result.rows[0];
  return (
    <>
      <div className="small muted" data-testid="plan-memory">
        {memory
          ? `Memory: ${gib(memory.deviceBytes)} GiB per GPU bounds the batch${memory.notes.length > 0 ? ` (${memory.notes.join('; ')})` : ''}.`
          : 'Memory capacity is not modelled: the profile does not say how much memory its device has; enter the GPU memory to bound the batch.'}
      </div>
      <div className="row" style={{ flexShrink: 0 }}>
        <div style={{ flex: 1, minWidth: 0 }}>
          <Banner kind={result.useAfd ? 'ok' : winner ? 'info' : 'warn'} message={result.reason} testId="plan-reason" />
        </div>
        {winner && (
          <button className="btn primary" data-testid="plan-use-winner" onClick={() => onUse(winner)}>
            Use {rowLabel(winner)}
          </button>
        )}
      </div>
      {result.rows.length > 0 && (
        <div className="panel" data-testid="plan-table-wrap" style={{ flexShrink: 0, maxHeight: '35vh', overflow: 'auto', padding: 0 }}>
          <table className="small" data-testid="plan-table">
            <thead style={{ position: 'sticky', top: 0, background: 'var(--bg-raised)' }}>
              <tr>
                {['#', 'serve as', 'GPUs used', 'batch/rank', 'TPOT ms', 'tok/s', 'tok/s/GPU', 'FFN busy', 'GiB/GPU', 'notes', ''].map((h) => (
                  <th key={h}>{h}</th>
                ))}
              </tr>
            </thead>
            <tbody>
              {result.rows.map((r, i) => (
                <tr key={`${r.topology}-${r.stages}`} data-testid={`plan-row-${i}`} data-kind={r.kind} data-topology={r.topology}>
                  <td className="mono">{i + 1}</td>
                  <td>{rowLabel(r)}</td>
                  <td className="mono" data-testid={`plan-gpus-used-${i}`}>{`${r.gpusUsed}/${gpus}`}</td>
                  <td className="mono">{r.batchPerRank}</td>
                  <td className="mono">{r.tpotMs.toFixed(2)}</td>
                  <td className="mono">{Math.round(r.tokensPerS)}</td>
                  <td className="mono">{r.tokensPerSPerGpu.toFixed(1)}</td>
                  <td className="mono">{r.kind === 'afd' ? `${Math.round(r.ffnBusy * 100)}%` : '-'}</td>
                  <td className="mono">{r.memoryBytesPerGpu !== undefined ? gib(r.memoryBytesPerGpu) : '-'}</td>
                  <td className="dim" data-testid={`plan-notes-${i}`} title={r.notes.join('\n')} style={{ maxWidth: '18rem', overflow: 'hidden', textOverflow: 'ellipsis', whiteSpace: 'nowrap' }}>
                    {r.notes.join('; ')}
                  </td>
                  <td>
                    <PlanUseButton index={i} notLaunchable={notLaunchable(r)} label={rowLabel(r)} onUse={() => onUse(r)} />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {result.dropped.length > 0 && (
        <details className="small" data-testid="plan-dropped" style={{ flexShrink: 0 }}>
          <summary>{result.dropped.length} shape{result.dropped.length === 1 ? '' : 's'} dropped: they do not fit the GPU's memory</summary>
          <ul>
            {result.dropped.map((d) => (
              <li key={d.topology}>
                {d.topology}: {d.reason}
              </li>
            ))}
          </ul>
        </details>
      )}
    </>
  );
}

/** Bytes as GiB: two decimals under 1 GiB, one above. */
function gib(bytes: number): string {
  const v = bytes / 2 ** 30;
  return v.toFixed(v < 1 ? 2 : 1);
}

function Curves() {
  const profile = usePlan((s) => s.profile);
  if (!profile) return null;
  const c = profileCurves(profile.profile);
  return (
    <div className="panel" style={{ flexShrink: 0 }}>
      <h3 style={{ marginTop: 0 }}>Cost curves of the profile</h3>
      <div style={{ display: 'grid', gridTemplateColumns: 'repeat(auto-fit, minmax(260px, 1fr))', gap: '1rem' }}>
        <CurveChart title="Attention half: ms per decode step vs batch" xLabel="batch" series={c.attention} testId="plan-curve-attention" />
        <CurveChart title="FFN half: ms per decode step vs tokens" xLabel="tokens" series={c.ffn} testId="plan-curve-ffn" />
        <CurveChart title="Connector: ms per layer round trip vs bytes" xLabel="bytes one way" bytes series={c.connectors} testId="plan-curve-connector" />
      </div>
    </div>
  );
}

export function PlanScreen({ navigate }: ScreenProps) {
  const { plan, topology } = useStores();
  const agents = useAgents((s) => s.agents);
  const profile = usePlan((s) => s.profile);
  const error = usePlan((s) => s.error);
  const running = usePlan((s) => s.running);
  const mixed = usePlan((s) => isMixed(s.mixed));
  const onUse = (r: PlanRow): void => {
    plan.getState().applyRow(r, topology, agents);
    navigate('topology');
  };
  const onUseMixed = (r: HeteroRow): void => {
    plan.getState().applyMixedRow(r, topology, agents);
    navigate('topology');
  };
  return (
    <>
      <div className="row">
        <h2 style={{ margin: 0 }}>Plan</h2>
        <span className="small muted">which topology to serve on N GPUs, or on a mixed cluster of card kinds, predicted from a measured cost profile or published card figures (same planner as afd-agent plan)</span>
        <span className="spacer" />
        {running && (
          <span className="badge info" data-testid="plan-running">
            planning…
          </span>
        )}
      </div>
      <div className="panel" style={{ flexShrink: 0 }}>
        <ProfileSource />
        <Inputs />
      </div>
      {!profile && !mixed && <p className="muted">Load a profile to plan: <span className="mono">npx afd-bench profile --out prof.json</span> measures one; docs/planner/profile-cpu-qwen3_moe-tiny.json is this repository's. Or give two card kinds or more under Mixed cluster: they are priced by their published figures, no profile needed.</p>}
      {error && <Banner kind="err" message={error} testId="plan-error" />}
      {mixed && !error && <PlanMixedRanking onUse={onUseMixed} />}
      {profile && !mixed && !error && <Ranking onUse={onUse} />}
      <Curves />
    </>
  );
}
