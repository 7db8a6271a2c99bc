/**
 * Topology: preset or custom xAyF (or colocated replicas) and the prefill ranks beside
 * them (wPxAyF), the wiring drawing, a device for each rank on any connected agent,
 * launch options, the spec a launch would send, and live validation that names the
 * broken rule.
 */
import { useEffect, useMemo } from 'react';
import { countOf, planTopology, prefillRanksOf, type AgentInfo } from '@afd/shared';
import { launchName } from '../lib/launchText.js';
import { useAgents, useInspect, useLaunch, usePlan, useTopology } from '../AppContext.js';
import { Banner } from '../components/Banner.js';
import { ExpertPlacement } from '../components/ExpertPlacement.js';
import { TopologyWiring } from '../components/TopologyWiring.js';
import { customPrefill, draftTopologyText, evaluateDraft, MAX_PREFILL_RANKS, PD_PRESETS, PRESETS, rankKey, shapeChoiceOf, type Assignment, type ShapeChoice } from '../stores/topologyDraft.js';
import { TopologyOptions } from './TopologyOptions.js';
import type { ScreenProps } from './types.js';

function deviceOptions(agents: readonly AgentInfo[]): { value: string; label: string; a: Assignment }[] {
  const out: { value: string; label: string; a: Assignment }[] = [];
  for (const ag of agents) {
    if (!ag.inventory) continue;
    for (const d of ag.inventory.devices) {
      const a: Assignment = { agentId: ag.agentId, backend: d.kind, deviceIndex: d.index };
      out.push({ value: `${ag.agentId}|${d.kind}|${d.index}`, label: `${ag.agentId} · ${d.kind === 'cpu' ? 'cpu' : `cuda:${d.index} ${d.name}`}${ag.state === 'connected' ? '' : ` (${ag.state})`}`, a });
    }
  }
  return out;
}

export function TopologyScreen({ navigate }: ScreenProps) {
  const agents = useAgents((s) => s.agents);
  const t = useTopology((s) => s);
  const launch = useLaunch((s) => s.launch);
  const replace = useLaunch((s) => s.replace);
  const busy = useLaunch((s) => s.busy);
  const progress = useLaunch((s) => s.progress);
  const launchError = useLaunch((s) => s.error);
  const clearLaunchError = useLaunch((s) => s.clearError);

  // New agents or devices: place the ranks that have no device yet.
  const agentSig = agents.map((a) => `${a.agentId}:${a.state}:${a.inventory?.devices.length ?? 0}`).join(',');
  useEffect(() => {
    t.autoAssign(agents);
  }, [agentSig]);

  const fromPlan = usePlan((s) => s.applied);
  const inspections = useInspect((s) => s.inspections);
  const want = useInspect((s) => s.want);
  const ev = useMemo(() => evaluateDraft(t, agents, inspections), [t, agents, inspections]);
  const plan = ev.topology ? planTopology(ev.topology) : null;
  const prefillCount = ev.topology ? prefillRanksOf(ev.topology) : 0;
  const options = deviceOptions(agents);
  const running = progress && (progress.state === 'launching' || progress.state === 'running' || progress.state === 'stopping') ? progress : null;
  // The agents that would run ranks are asked about the model directory while it is typed.
  const dir = t.options.modelDir.trim();
  const rankAgents = [...new Set(ev.ranks.map((r) => t.assignments[rankKey(r)]?.agentId).filter((id): id is string => id !== undefined))];
  const rankAgentsKey = rankAgents.join(',');
  useEffect(() => {
    if (dir !== '' && rankAgents.length > 0) want(rankAgents, dir);
  }, [dir, rankAgentsKey]);
  const draftName = t.choice === 'colocated' ? countOf(t.replicas, 'colocated replica') : (ev.topology?.name ?? draftTopologyText(t));

  const doLaunch = async (): Promise<void> => {
    if (!ev.spec) return;
    if (await launch(ev.spec)) navigate('launch');
  };
  /** One click: stop the running launch and launch this draft instead. */
  const doReplace = async (): Promise<void> => {
    if (!ev.spec) return;
    if (await replace(ev.spec)) navigate('launch');
  };

  const choices: { id: ShapeChoice; label: string }[] = [
    ...PRESETS.map((p) => ({ id: p, label: p })),
    ...PD_PRESETS.map((p) => ({ id: p.id, label: p.id })),
    { id: 'custom', label: 'Custom xAyF' },
    { id: 'colocated', label: 'Colocated (no AFD)' },
  ];
  const checked = shapeChoiceOf(t);
  // A custom name led by wP gives the prefill ranks itself; the field then shows its count.
  const namedPrefill = t.choice === 'custom' ? customPrefill(t.custom) : null;

  return (
    <>
      <h2>Topology</h2>
      {fromPlan && fromPlan.topology === (t.choice === 'colocated' ? `colocated:${t.replicas}` : draftTopologyText(t).trim()) && <Banner kind="info" message={fromPlan.note} testId="topology-from-plan" />}
      <div className="panel">
        <h3 id="topo-choice">Shape</h3>
        <div className="row" role="radiogroup" aria-labelledby="topo-choice">
          {choices.map((c) => (
            <label key={c.id} className="inline" style={{ marginRight: '0.75rem' }}>
              <input type="radio" name="topology" checked={checked === c.id} onChange={() => t.setChoice(c.id, agents)} data-testid={`preset-${c.id}`} />
              <span style={{ color: 'var(--text)' }}>{c.label}</span>
            </label>
          ))}
        </div>
        {t.choice === 'custom' && (
          <label style={{ marginTop: '0.5rem' }}>
            Custom topology (x attention ranks, y FFN ranks; optionally led by wP)
            <input data-testid="custom-topology" value={t.custom} onChange={(e) => t.setCustom(e.target.value, agents)} size={10} placeholder="3A2F" />
          </label>
        )}
        {t.choice !== 'colocated' && (
          <label style={{ marginTop: '0.5rem' }} title={namedPrefill !== null ? 'given by the custom topology name' : 'Each prefill rank runs the whole model, prefills prompts only and sends their KV blocks to an attention rank over TCP; 0 = the attention ranks prefill themselves'}>
            Prefill ranks (whole model each, prefill only; 0 = none)
            <input
              type="number"
              min={0}
              max={MAX_PREFILL_RANKS}
              value={namedPrefill ?? (Number.isNaN(t.prefill) ? '' : t.prefill)}
              disabled={namedPrefill !== null}
              onChange={(e) => t.setPrefill(e.target.value.trim() === '' ? Number.NaN : Number(e.target.value), agents)}
              style={{ maxWidth: '8rem' }}
              data-testid="prefill-ranks"
            />
          </label>
        )}
        {t.choice === 'colocated' && (
          <label style={{ marginTop: '0.5rem' }}>
            Replicas (each runs the whole model)
            <input type="number" min={1} max={64} value={t.replicas} onChange={(e) => t.setReplicas(Number(e.target.value), agents)} />
          </label>
        )}
      </div>

      <div data-testid="topology-validation" aria-live="polite">
        {ev.problems.length > 0 ? (
          <Banner kind="err" message={`Cannot launch yet:\n• ${ev.problems.join('\n• ')}`} testId="topology-problems" />
        ) : running ? (
          <Banner kind="warn" message={`${launchName(running)} is ${running.state}: stop it before launching ${draftName} (Stop and launch this one, below, does both).`} testId="topology-busy" />
        ) : ev.pending.length > 0 ? (
          <Banner kind="info" message={ev.pending.join('\n')} testId="topology-pending" />
        ) : (
          <Banner kind="ok" message={`Ready to launch ${draftName} on ${countOf(rankAgents.length, 'agent')}.`} testId="topology-ok" />
        )}
        {ev.warnings.map((w) => (
          <div key={w} style={{ marginTop: 6 }}>
            <Banner kind="warn" message={w} />
          </div>
        ))}
      </div>

      <div className="grid-2">
        <div className="panel">
          <div className="row">
            <h3 style={{ margin: 0 }}>Rank placement</h3>
            <span className="spacer" />
            <button className="btn" onClick={() => t.autoAssign(agents, true)} disabled={agents.length === 0}>
              Spread over devices
            </button>
          </div>
          {ev.ranks.length === 0 ? (
            <p className="muted">Fix the topology to place its ranks.</p>
          ) : (
            <table>
              <thead>
                <tr>
                  <th>World</th>
                  <th>Rank</th>
                  <th>Device</th>
                </tr>
              </thead>
              <tbody>
                {ev.ranks.map((r, i) => {
                  const a = t.assignments[rankKey(r)];
                  const value = a ? `${a.agentId}|${a.backend}|${a.deviceIndex}` : '';
                  return (
                    <tr key={rankKey(r)} data-testid={`placement-${r.role}-${r.rank}`}>
                      <td className="mono" title={r.role === 'prefill' ? 'prefill ranks are outside the AFD world' : undefined}>
                        {r.role === 'prefill' ? '—' : i}
                      </td>
                      <td className="mono">{`${r.role} ${r.rank}`}</td>
                      <td>
                        <select
                          aria-label={`Device of ${r.role} rank ${r.rank}`}
                          value={value}
                          onChange={(e) => {
                            const o = options.find((x) => x.value === e.target.value);
                            if (o) t.assign(rankKey(r), o.a);
                          }}
                        >
                          {!a && <option value="">— pick a device —</option>}
                          {a && !options.some((o) => o.value === value) && <option value={value}>{`${a.agentId} · ${a.backend}:${a.deviceIndex} (gone)`}</option>}
                          {options.map((o) => (
                            <option key={o.value} value={o.value}>
                              {o.label}
                            </option>
                          ))}
                        </select>
                      </td>
                    </tr>
                  );
                })}
              </tbody>
            </table>
          )}
        </div>
        <div className="panel">
          <h3>Plan</h3>
          {plan ? (
            <div className="small mono" data-testid="topology-plan">
              {ev.topology && <TopologyWiring topology={ev.topology} />}
              <div>world: {plan.world.map((w) => `${w.role === 'ffn' ? 'F' : 'A'}${w.rank}`).join(' ')}</div>
              {plan.blocks.map((b) => (
                <div key={b.ffnRank}>
                  F{b.ffnRank} ← {b.attentionRanks.map((a) => `A${a}`).join(', ')} (control hub F{b.ffnRank})
                </div>
              ))}
              {prefillCount > 0 && (
                <div data-testid="plan-prefill">
                  {Array.from({ length: prefillCount }, (_, p) => `P${p}`).join(', ')} → every attention rank (KV blocks over TCP, port {t.options.config.afd.pd.port}+p)
                </div>
              )}
              <ExpertPlacement numFfn={plan.ffn.ranks} expertParallel={t.options.config.afd.enableExpertParallel} modelDir={t.options.modelDir} agents={agents} />
            </div>
          ) : (
            <p className="muted">{t.choice === 'colocated' ? 'Colocated replicas run the whole model each; no attention/FFN split.' : 'No plan: the topology is invalid.'}</p>
          )}
          {ev.spec && (
            <details data-testid="launch-spec-details">
              <summary>Launch spec (what Launch sends to the agents)</summary>
              <pre className="small mono" data-testid="launch-spec" style={{ maxHeight: '16rem', overflow: 'auto' }}>
                {JSON.stringify(ev.spec, null, 2)}
              </pre>
            </details>
          )}
        </div>
      </div>

      <TopologyOptions agents={agents} rankAgents={rankAgents} inspections={inspections} />

      {launchError && <Banner kind="err" message={launchError} onDismiss={clearLaunchError} testId="launch-error" />}
      <div className="row action-bar" data-testid="topology-actions">
        <button className="btn primary" data-testid="launch-button" disabled={!ev.spec || busy !== null || Boolean(running)} onClick={() => void doLaunch()}>
          {busy === 'launch' ? 'Launching…' : 'Launch'}
        </button>
        {running && (
          <button className="btn danger" data-testid="replace-button" disabled={!ev.spec || busy !== null || running.state === 'stopping'} onClick={() => void doReplace()}>
            {busy === 'replace' ? 'Stopping and launching…' : 'Stop and launch this one'}
          </button>
        )}
        {running && (
          <button className="btn" onClick={() => navigate('launch')}>
            Open Launch
          </button>
        )}
      </div>
    </>
  );
}
