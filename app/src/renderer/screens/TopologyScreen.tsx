/**
 * Topology: preset or custom xAyF (or colocated replicas), a device for each rank on any
 * connected agent, launch options, and live validation that names the broken rule.
 */
import { useEffect, useMemo } from 'react';
import { countOf, planTopology, type AgentInfo } from '@afd/shared';
import { launchName } from '../lib/launchText.js';
import { useAgents, useInspect, useLaunch, usePlan, useTopology } from '../AppContext.js';
import { Banner } from '../components/Banner.js';
import { ExpertPlacement } from '../components/ExpertPlacement.js';
import { draftTopologyText, evaluateDraft, PRESETS, rankKey, type Assignment, type TopologyChoice } from '../stores/topologyDraft.js';
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

  const choices: { id: TopologyChoice; label: string }[] = [...PRESETS.map((p) => ({ id: p as TopologyChoice, label: p })), { id: 'custom', label: 'Custom xAyF' }, { id: 'colocated', label: 'Colocated (no AFD)' }];

  return (
    <>
      <h2>Topology</h2>
      {fromPlan && fromPlan.topology === (t.choice === 'colocated' ? `colocated:${t.replicas}` : draftTopologyText(t).trim()) && <Banner kind="info" message={fromPlan.note} testId="topology-from-plan" />}
      <div className="panel">
        <h3 id="topo-choice">Shape</h3>
        <div className="row" role="radiogroup" aria-labelledby="topo-choice">
          {choices.map((c) => (
            <label key={c.id} className="inline" style={{ marginRight: '0.75rem' }}>
              <input type="radio" name="topology" checked={t.choice === c.id} onChange={() => t.setChoice(c.id, agents)} data-testid={`preset-${c.id}`} />
              <span style={{ color: 'var(--text)' }}>{c.label}</span>
            </label>
          ))}
        </div>
        {t.choice === 'custom' && (
          <label style={{ marginTop: '0.5rem' }}>
            Custom topology (x attention ranks, y FFN ranks)
            <input data-testid="custom-topology" value={t.custom} onChange={(e) => t.setCustom(e.target.value, agents)} size={10} placeholder="3A2F" />
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
                    <tr key={rankKey(r)}>
                      <td className="mono">{i}</td>
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
              <div>world: {plan.world.map((w) => `${w.role === 'ffn' ? 'F' : 'A'}${w.rank}`).join(' ')}</div>
              {plan.blocks.map((b) => (
                <div key={b.ffnRank}>
                  F{b.ffnRank} ← {b.attentionRanks.map((a) => `A${a}`).join(', ')} (control hub F{b.ffnRank})
                </div>
              ))}
              <ExpertPlacement numFfn={plan.ffn.ranks} expertParallel={t.options.config.afd.enableExpertParallel} modelDir={t.options.modelDir} agents={agents} />
            </div>
          ) : (
            <p className="muted">{t.choice === 'colocated' ? 'Colocated replicas run the whole model each; no attention/FFN split.' : 'No plan: the topology is invalid.'}</p>
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
