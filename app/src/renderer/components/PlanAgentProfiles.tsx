/**
 * The Plan screen's second profile source: the profiles a connected agent has on its host
 * (plan.profiles: $AFD_HOME/profiles/*.json and the repository's CPU profile), listed when
 * the screen opens and again on demand; a click loads one as if its file had been picked.
 */
import { useEffect, useState } from 'react';
import { useAgents, usePlan } from '../AppContext.js';

export function PlanAgentProfiles() {
  const agents = useAgents((s) => s.agents).filter((a) => a.state === 'connected');
  const listed = usePlan((s) => s.agentProfiles);
  const list = usePlan((s) => s.listAgentProfiles);
  const loadProfile = usePlan((s) => s.loadProfile);
  const [picked, setPicked] = useState('');
  const agentId = agents.some((a) => a.agentId === picked) ? picked : (agents[0]?.agentId ?? '');
  useEffect(() => {
    if (agentId && listed?.agentId !== agentId) void list(agentId);
  }, [agentId]);
  if (agents.length === 0) return <div className="small muted">No agent connected: its profiles would be listed here.</div>;
  return (
    <div className="row small" data-testid="plan-agent-profiles">
      <span>Profiles on</span>
      <select value={agentId} onChange={(e) => setPicked(e.target.value)} data-testid="plan-agent" aria-label="Agent whose profiles to list">
        {agents.map((a) => (
          <option key={a.agentId} value={a.agentId}>
            {a.agentId}
          </option>
        ))}
      </select>
      <button className="btn" style={{ padding: '0.1rem 0.5rem' }} onClick={() => void list(agentId)} data-testid="plan-agent-list" title="List again">
        ↻
      </button>
      {listed?.state === 'listing' && <span className="muted">listing…</span>}
      {listed?.state === 'failed' && (
        <span style={{ color: 'var(--err)' }} data-testid="plan-agent-error">
          {listed.error}
        </span>
      )}
      {listed?.state === 'done' && listed.result.profiles.length === 0 && <span className="muted">none (put afd-bench profile files in $AFD_HOME/profiles)</span>}
      {listed?.state === 'done' &&
        listed.result.profiles.map((p, i) => (
          <button key={p.path} className="btn" style={{ padding: '0.1rem 0.5rem' }} title={p.path} data-testid={`plan-agent-profile-${i}`} onClick={() => loadProfile(`${listed.agentId}: ${p.name}`, p.text)}>
            {p.name} <span className="muted">({p.origin === 'repo' ? 'repository' : 'AFD_HOME'})</span>
          </button>
        ))}
      {listed?.state === 'done' && listed.result.skipped.length > 0 && (
        <span className="muted" title={listed.result.skipped.map((s) => `${s.path}: ${s.reason}`).join('\n')}>
          {listed.result.skipped.length} skipped
        </span>
      )}
    </div>
  );
}
