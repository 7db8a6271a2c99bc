/** Agents: add by URL + token, connection state, and each host's inventory. */
import { useState, type FormEvent } from 'react';
import type { AgentInfo } from '@afd/shared';
import { useAgents, useFields } from '../AppContext.js';
import { Banner } from '../components/Banner.js';
import { formatBytes } from '../lib/format.js';
import type { ScreenProps } from './types.js';

const STATE_KIND: Record<AgentInfo['state'], string> = { connected: 'ok', connecting: 'info', unreachable: 'err', disconnected: 'warn', unauthorized: 'err', error: 'err' };

/** CUDA MPS on the host: what ranks sharing a GPU will get. */
function MpsLine({ mps }: { mps: NonNullable<AgentInfo['inventory']>['mps'] }) {
  let text: string;
  if (mps.unavailable) text = `no CUDA MPS: ${mps.unavailable}; ranks sharing a GPU run time-sliced`;
  else if (mps.daemon) text = `CUDA MPS: control daemon running on ${mps.daemon.pipeDirectory}${mps.daemon.managedByAgent ? ' (started by an agent)' : ' (not the agent\'s: reused, never stopped)'}`;
  else text = `CUDA MPS available (${mps.controlProgram}): started when ranks share a GPU`;
  return (
    <div className={mps.unavailable ? 'warn-text' : 'muted'} data-testid="agent-mps">
      {text}
    </div>
  );
}

function Inventory({ agent }: { agent: AgentInfo }) {
  const inv = agent.inventory;
  if (!inv) return <span className="muted">{agent.state === 'connected' ? 'loading inventory…' : 'unknown until connected'}</span>;
  return (
    <div className="small">
      <div>
        {inv.hostname} · {inv.platform}/{inv.arch} · {inv.cpu.cores} cores · {formatBytes(inv.memory.totalBytes)} RAM
      </div>
      <ul style={{ margin: '0.25rem 0', paddingLeft: '1.1rem' }}>
        {inv.devices.map((d) => (
          <li key={`${d.kind}${d.index}`} data-testid="agent-device">
            {d.kind === 'cpu'
              ? `cpu · ${d.name} · ${d.cores} cores`
              : `cuda:${d.index} · ${d.name} · ${formatBytes(d.totalMemoryBytes)} (${formatBytes(d.freeMemoryBytes)} free) · sm_${d.computeCapability.replace('.', '')} · ${d.mps.available ? 'MPS' : 'no MPS'}`}
          </li>
        ))}
      </ul>
      <div className="muted">
        backends: {inv.backends.join(', ')} · agent {inv.versions.agent} · node {inv.versions.node} · addon {inv.versions.addon} ({inv.versions.addonVariant})
        {inv.libraries.nccl.loaded ? ` · NCCL ${inv.libraries.nccl.version}` : ''}
      </div>
      {inv.cudaError && <div className="muted">CUDA: {inv.cudaError}</div>}
      {inv.devices.some((d) => d.kind === 'cuda') && <MpsLine mps={inv.mps} />}
      {inv.models.length > 0 && <div className="muted">models: {inv.models.map((m) => m.name).join(', ')}</div>}
    </div>
  );
}

export function AgentsScreen(_props: ScreenProps) {
  const { agents, error, adding, add, remove, clearError } = useFields(useAgents, 'agents', 'error', 'adding', 'add', 'remove', 'clearError');
  const [url, setUrl] = useState('ws://127.0.0.1:7700');
  const [token, setToken] = useState('');

  const submit = async (e: FormEvent): Promise<void> => {
    e.preventDefault();
    if (await add(url, token)) setToken('');
  };

  return (
    <>
      <h2>Agents</h2>
      <form className="panel row" onSubmit={(e) => void submit(e)} aria-label="Add an agent" style={{ alignItems: 'flex-end' }}>
        <label>
          Agent URL
          <input data-testid="agent-url" value={url} onChange={(e) => setUrl(e.target.value)} size={32} placeholder="ws://HOST:7700" />
        </label>
        <label>
          Token
          <input data-testid="agent-token" type="password" value={token} onChange={(e) => setToken(e.target.value)} size={40} placeholder="contents of $AFD_HOME/agent-token" autoComplete="off" />
        </label>
        <button className="btn primary" type="submit" disabled={adding} data-testid="agent-add">
          {adding ? 'Connecting…' : 'Add agent'}
        </button>
      </form>
      {error && <Banner kind="err" message={error} onDismiss={clearError} testId="agents-error" />}
      <div className="panel">
        <h3>Connected agents</h3>
        {agents.length === 0 ? (
          <p className="muted">No agents yet. Start one with `afd-agent serve` on a host and add it above with its token.</p>
        ) : (
          <table>
            <thead>
              <tr>
                <th>Agent</th>
                <th>State</th>
                <th>Host and devices</th>
                <th />
              </tr>
            </thead>
            <tbody>
              {agents.map((a) => (
                <tr key={a.agentId} data-testid={`agent-row-${a.agentId}`}>
                  <td>
                    <div className="mono">{a.agentId}</div>
                    <div className="muted small">{a.url}</div>
                  </td>
                  <td>
                    <span className={`badge ${STATE_KIND[a.state]}`} data-testid="agent-state">
                      {a.state}
                    </span>
                    {a.latencyMs !== null && <div className="muted small">{a.latencyMs} ms ping</div>}
                    {a.message && <div className="small" style={{ color: 'var(--warn)', maxWidth: 320 }}>{a.message}</div>}
                    {a.topology && a.topology.state !== 'idle' && <div className="muted small">topology: {a.topology.state}</div>}
                  </td>
                  <td>
                    <Inventory agent={a} />
                  </td>
                  <td>
                    <button className="btn danger" onClick={() => void remove(a.agentId)} aria-label={`Remove agent ${a.agentId}`}>
                      Remove
                    </button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </div>
    </>
  );
}
