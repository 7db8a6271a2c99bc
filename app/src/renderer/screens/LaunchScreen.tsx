/** Launch: per-rank progress (loading bytes, rendezvous, warmup, ready), failures with their last log lines, how each GPU is shared, the restart policy switch, stop and restart. */
import { gpuRanksText, gpuSharingLabel, rankUrlText, remoteRankHost, type AgentInfo, type LaunchProgress, type RankState } from '@afd/shared';
import { useAgents, useFields, useLaunch, useStores } from '../AppContext.js';
import { Banner } from '../components/Banner.js';
import { RestartPolicySwitch } from '../components/RestartPolicySwitch.js';
import { progressDetail } from '../lib/format.js';
import { recoveryText } from '../lib/launchText.js';
import type { ScreenProps } from './types.js';

const STATE_KIND: Record<RankState['state'], string> = {
  pending: '',
  starting: 'info',
  loading: 'info',
  rendezvous: 'info',
  warmup: 'info',
  ready: 'ok',
  stopping: 'warn',
  exited: 'warn',
  failed: 'err',
};

/** What a rank in a phase that is over shows instead of its last progress (no "rendezvous 1 / 1" on an exited rank). */
const ENDED: Partial<Record<RankState['state'], string>> = { pending: 'waiting to start', stopping: '', exited: '', failed: '' };

function RankProgress({ r }: { r: RankState }) {
  if (r.state === 'ready') {
    return (
      <div className="progress ok" aria-label="ready">
        <div style={{ width: '100%' }} />
      </div>
    );
  }
  const p = r.progress;
  const ended = ENDED[r.state];
  if (ended !== undefined) return ended ? <span className="muted small">{ended}</span> : null;
  if (!p) return <span className="muted small">{r.state}</span>;
  const frac = p.bytesTotal > 0 ? Math.min(1, p.bytesDone / p.bytesTotal) : 0;
  const detail = progressDetail(p);
  return (
    <div>
      <div className={`progress${r.state === 'failed' ? ' err' : ''}`} role="progressbar" aria-valuemin={0} aria-valuemax={100} aria-valuenow={Math.round(frac * 100)} aria-label={`${p.phase} progress`}>
        <div style={{ width: `${(frac * 100).toFixed(1)}%` }} />
      </div>
      <div className="muted small">
        {p.phase} {detail}
      </div>
    </div>
  );
}

/**
 * A rank's URL as the user can use it, as `afd-agent launch` prints it (rankUrlText): the
 * loopback URL of a rank whose agent is on another host says where it works and through what.
 */
function rankUrlOf(apiUrl: string, r: RankState, agents: readonly AgentInfo[]): string {
  const a = agents.find((x) => x.agentId === r.agentId);
  return rankUrlText(apiUrl, r.role, a ? remoteRankHost(a.agentId, a.url, a.inventory?.advertiseHost) : null);
}

/**
 * What keeps a running launch from serving fully: ready ranks whose health says they are
 * not serving (e.g. an FFN peer lost in a partition) and agents of the launch the console
 * cannot reach; null when there is nothing.
 */
function degradedText(ranks: readonly RankState[], agents: readonly AgentInfo[]): string | null {
  const lines: string[] = [];
  const ids = new Set(ranks.map((r) => r.agentId));
  for (const a of agents) {
    if (ids.has(a.agentId) && a.state !== 'connected') lines.push(`agent ${a.agentId} is ${a.state}: its ranks' state here may be out of date`);
  }
  for (const r of ranks) if (r.state === 'ready' && r.message) lines.push(`${r.role} ${r.rank} on ${r.agentId} is not serving: ${r.message}`);
  return lines.length > 0 ? lines.join('\n') : null;
}

/** What the console stopped after the failure, so no rank is left waiting for a peer. */
function CleanupNote({ cleanup }: { cleanup: NonNullable<LaunchProgress['cleanup']> }) {
  const what = cleanup.stopped.length > 0 ? cleanup.stopped.join('\n') : 'no other rank was running';
  if (cleanup.state === 'stopping') return <Banner kind="info" message={`Stopping the rest of the failed launch:\n${what}`} testId="launch-cleanup" />;
  const problems = cleanup.problems.length > 0 ? `\nCould not stop everything:\n${cleanup.problems.join('\n')}` : '';
  return <Banner kind={problems ? 'err' : 'warn'} message={`${cleanup.stopped.length > 0 ? `Stopped the rest of the failed launch:\n${what}` : 'No other rank of the failed launch was running.'}${problems}\nRestart launches it again.`} testId="launch-cleanup" />;
}

const SHARING_KIND: Record<LaunchProgress['gpus'][number]['sharing'], string> = { exclusive: '', mps: 'ok', 'time-slice': 'warn' };

/** Each GPU of the launch: its ranks (with SM shares under MPS) and how they share it; shown once any GPU holds several ranks. */
function GpuTable({ gpus }: { gpus: LaunchProgress['gpus'] }) {
  if (!gpus.some((g) => g.sharing !== 'exclusive')) return null;
  return (
    <div className="panel">
      <table data-testid="gpu-table">
        <thead>
          <tr>
            <th>GPU</th>
            <th>Ranks</th>
            <th>Sharing</th>
            <th>Details</th>
          </tr>
        </thead>
        <tbody>
          {gpus.map((g) => (
            <tr key={`${g.agentId}:${g.deviceIndex}`} data-testid={`gpu-${g.agentId}-${g.deviceIndex}`}>
              <td className="mono">
                {g.agentId} cuda:{g.deviceIndex}
              </td>
              <td className="mono">{gpuRanksText(g)}</td>
              <td>
                <span className={`badge ${SHARING_KIND[g.sharing]}`} data-testid="gpu-sharing">
                  {gpuSharingLabel(g)}
                </span>
              </td>
              <td className="small muted" style={{ maxWidth: 520 }}>
                {g.note}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

export function LaunchScreen({ navigate }: ScreenProps) {
  const { progress, busy, error, stop, restart, setRestartPolicy, clearError } = useFields(useLaunch, 'progress', 'busy', 'error', 'stop', 'restart', 'setRestartPolicy', 'clearError');
  const agents = useAgents((s) => s.agents);
  const { logs } = useStores();

  if (!progress) {
    return (
      <>
        <h2>Launch</h2>
        <div className="panel">
          <p>Nothing is launched yet.</p>
          <button className="btn primary" onClick={() => navigate('topology')}>
            Choose a topology
          </button>
        </div>
      </>
    );
  }
  const ready = progress.ranks.filter((r) => r.state === 'ready').length;
  const degraded = degradedText(progress.ranks, agents);
  const recovery = recoveryText(progress);
  const active = progress.state === 'launching' || progress.state === 'running';
  const kind = progress.state === 'running' ? 'ok' : progress.state === 'failed' ? 'err' : progress.state === 'launching' ? 'info' : 'warn';
  const openLogs = (r: RankState): void => {
    void logs.getState().select({ agentId: r.agentId, role: r.role, rank: r.rank });
    navigate('logs');
  };

  return (
    <>
      <h2>Launch</h2>
      <div className="panel row">
        <span className={`badge ${kind}`} data-testid="launch-state">
          {progress.state}
        </span>
        <span>
          {ready} / {progress.ranks.length} ranks ready
        </span>
        <span className="muted small mono">{progress.launchId}</span>
        {progress.routerUrl && (
          <span className="small">
            API: <span className="mono" data-testid="router-url">{progress.routerUrl}/v1</span>
          </span>
        )}
        <span className="spacer" />
        <button className="btn" onClick={() => void restart()} disabled={busy !== null || progress.state === 'stopping'} data-testid="restart-button">
          {busy === 'restart' ? 'Restarting…' : 'Restart'}
        </button>
        <button className="btn danger" onClick={() => void stop()} disabled={busy !== null || (!active && !(progress.state === 'failed' && progress.cleanup?.state !== 'done'))} data-testid="stop-button">
          {busy === 'stop' ? 'Stopping…' : 'Stop'}
        </button>
      </div>
      {progress.restart && <RestartPolicySwitch restart={progress.restart} disabled={busy !== null || !active} onChange={setRestartPolicy} />}
      {progress.message && (
        <Banner kind="err" message={`${progress.message}${progress.ranks.find((r) => r.state === 'failed')?.message?.includes('\n') ? '\nIts last log lines are in its row below.' : ''}`} testId="launch-failure" />
      )}
      {progress.cleanup && <CleanupNote cleanup={progress.cleanup} />}
      {recovery && <Banner kind={progress.state === 'running' ? 'info' : 'warn'} message={`${recovery}${progress.state === 'launching' ? '\nThe agent is restarting it (with back-off); requests meanwhile get 503 with Retry-After.' : ''}`} testId="launch-recovery" />}
      {error && <Banner kind="err" message={error} onDismiss={clearError} />}
      {progress.state === 'running' && degraded && <Banner kind="warn" message={degraded} testId="launch-degraded" />}
      {progress.state === 'running' && !degraded && (
        <Banner kind="ok" message="Every rank is ready. Try it in the Playground, and watch it on the Dashboard." />
      )}
      <div className="panel">
        <table data-testid="rank-table">
          <thead>
            <tr>
              <th>Rank</th>
              <th>Agent</th>
              <th>State</th>
              <th style={{ minWidth: 180 }}>Progress</th>
              <th>Process</th>
              <th>Details</th>
            </tr>
          </thead>
          <tbody>
            {progress.ranks.map((r) => (
              <tr key={`${r.role}:${r.rank}`} data-testid={`rank-${r.role}-${r.rank}`}>
                <td className="mono">{`${r.role} ${r.rank}`}</td>
                <td className="mono">{r.agentId}</td>
                <td>
                  <span className={`badge ${STATE_KIND[r.state]}`} data-testid="rank-state">
                    {r.state}
                  </span>
                </td>
                <td>
                  <RankProgress r={r} />
                </td>
                <td className="small muted">
                  {r.pid !== null && <div>pid {r.pid}</div>}
                  {r.exitCode !== null && <div>exit code {r.exitCode}</div>}
                  {r.restarts !== undefined && <div data-testid="rank-restarts">restarts {r.restarts}</div>}
                  {r.apiUrl && r.state !== 'exited' && r.state !== 'failed' && <div className="mono">{rankUrlOf(r.apiUrl, r, agents)}</div>}
                </td>
                <td style={{ maxWidth: 520 }}>
                  {r.message && <pre className="log" style={{ maxHeight: 200 }}>{r.message}</pre>}
                  <button className="btn" onClick={() => openLogs(r)} aria-label={`Logs of ${r.role} rank ${r.rank}`}>
                    Logs
                  </button>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      <GpuTable gpus={progress.gpus} />
    </>
  );
}
