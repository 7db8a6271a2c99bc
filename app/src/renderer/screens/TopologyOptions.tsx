/**
 * Launch options of the Topology screen: model (with what each agent that runs ranks
 * found in the directory) and where its weights come from, API port, GPU sharing (MPS and
 * SM shares), connector, DBO, gate, expert parallelism and its exchange, graphs.
 */
import { AFD_CONNECTORS, EP_TRANSPORTS, GPU_SHARING_MODES, PD_TRANSPORTS, transportInfo, type AfdConnector, type AgentInfo, type EpTransport, type GpuSharingMode, type LoadFormat, type PdTransport, type SmShare } from '@afd/shared';
import { useTopology } from '../AppContext.js';
import { defaultModelLines } from '../lib/defaultModelText.js';
import { modelSummary } from '../stores/draftChecks.js';
import { customPrefill } from '../stores/topologyDraft.js';
import { inspectKey, type Inspection } from '../stores/inspectStore.js';

/** One line per agent about the model directory: its summary and roles, or why it cannot be used; empty: the model each agent loads by default. */
function ModelInfo({ dir, agents, rankAgents, inspections }: { dir: string; agents: readonly AgentInfo[]; rankAgents: readonly string[]; inspections: Readonly<Record<string, Inspection>> }) {
  if (dir === '') {
    return (
      <ul className="model-info small muted" data-testid="model-info">
        {defaultModelLines(rankAgents, agents).map((line) => (
          <li key={line} data-testid="default-model-line">
            {line}
          </li>
        ))}
      </ul>
    );
  }
  if (!dir.startsWith('/') || rankAgents.length === 0) return null;
  return (
    <ul className="model-info small" data-testid="model-info">
      {rankAgents.map((agentId) => {
        const i = inspections[inspectKey(agentId, dir)];
        const where = rankAgents.length > 1 ? `${agentId}: ` : '';
        if (!i || i.state === 'checking') return <li key={agentId} className="muted">{where}checking…</li>;
        if (i.state === 'failed') return <li key={agentId} className="err-text">{where}cannot check: {i.error}</li>;
        const r = i.result;
        const kind = r.status === 'ready' ? (r.reason ? 'warn-text' : 'ok-text') : r.status === 'config-only' ? 'warn-text' : 'err-text';
        return (
          <li key={agentId} className={kind} data-testid="model-info-line" data-status={r.status}>
            {where}
            {/* Why a directory cannot be used is listed once, in the problems above. */}
            {r.status === 'refused' ? 'refused (see above)' : `${modelSummary(r)} · roles: ${r.roles.join(', ') || 'none'}${r.status === 'config-only' ? ' · config only' : ''}`}
          </li>
        );
      })}
    </ul>
  );
}

function num(v: string): number {
  return v.trim() === '' ? Number.NaN : Number(v);
}

const SHARING_TEXT: Record<GpuSharingMode, string> = {
  auto: 'auto: ranks on one GPU run at once under CUDA MPS where the agent can start it, else time-sliced',
  mps: 'mps: under CUDA MPS, or the launch fails',
  'time-slice': 'time-slice: the driver takes turns (much slower steps)',
};

/** GPU sharing: how ranks placed on one GPU run there, and each role's share of its SMs under MPS (empty = no cap). */
function GpuSharingOptions({ roles }: { roles: readonly (keyof SmShare)[] }) {
  const sharing = useTopology((s) => s.options.config.gpuSharing);
  const setConfig = useTopology((s) => s.setConfig);
  const setShare = (role: keyof SmShare, text: string): void => setConfig('gpuSharing', { smShare: { ...sharing.smShare, [role]: text.trim() === '' ? undefined : Number(text) } });
  return (
    <div className="row" style={{ alignItems: 'flex-end', marginTop: '0.5rem' }}>
      <label title="Several ranks on one GPU: without CUDA MPS the driver time-slices them and every layer crossing waits for the other rank's turn; under MPS (the agent starts nvidia-cuda-mps-control) they run at once">
        GPU sharing
        <select value={sharing.mode} onChange={(e) => setConfig('gpuSharing', { mode: e.target.value as GpuSharingMode })} data-testid="gpu-sharing">
          {GPU_SHARING_MODES.map((m) => (
            <option key={m} value={m}>
              {SHARING_TEXT[m]}
            </option>
          ))}
        </select>
      </label>
      {roles.map((role) => (
        <label key={role} title="Percent of the shared GPU's SMs this role's ranks may use under MPS (CUDA_MPS_ACTIVE_THREAD_PERCENTAGE); empty = no cap">
          {role} SM share (%)
          <input type="number" min={1} max={100} placeholder="no cap" value={sharing.smShare[role] ?? ''} disabled={sharing.mode === 'time-slice'} onChange={(e) => setShare(role, e.target.value)} data-testid={`sm-share-${role}`} />
        </label>
      ))}
    </div>
  );
}

export function TopologyOptions({ agents, rankAgents, inspections }: { agents: readonly AgentInfo[]; rankAgents: readonly string[]; inspections: Readonly<Record<string, Inspection>> }) {
  const o = useTopology((s) => s.options);
  const set = useTopology((s) => s.setOptions);
  const setConfig = useTopology((s) => s.setConfig);
  const { model, afd, restart } = o.config;
  const setAfd = (patch: Partial<typeof afd>): void => setConfig('afd', patch);
  const colocated = useTopology((s) => s.choice === 'colocated');
  const prefill = useTopology((s) => s.choice !== 'colocated' && (s.prefill > 0 || customPrefill(s.choice === 'custom' ? s.custom : '') !== null));
  const models = agents.flatMap((a) => a.inventory?.models ?? []);
  return (
    <fieldset className="panel">
      <legend>Options</legend>
      <div className="row" style={{ alignItems: 'flex-start' }}>
        <div className="model-field">
        <label>
          Model directory on the agents (empty = the built-in model)
          <input list="model-dirs" value={o.modelDir} onChange={(e) => set({ modelDir: e.target.value })} size={44} placeholder="/models/Qwen3-30B-A3B" data-testid="model-dir" />
          <datalist id="model-dirs">
            {models.map((m) => (
              <option key={m.dir} value={m.dir}>
                {m.name}
              </option>
            ))}
          </datalist>
        </label>
        <ModelInfo dir={o.modelDir.trim()} agents={agents} rankAgents={rankAgents} inspections={inspections} />
        </div>
        <label>
          Weights
          <select value={model.loadFormat} onChange={(e) => setConfig('model', { loadFormat: e.target.value as LoadFormat })} data-testid="load-format">
            <option value="auto">checkpoint (safetensors)</option>
            <option value="dummy">dummy: random, generated on each rank</option>
          </select>
        </label>
        {model.loadFormat === 'dummy' && (
          <label>
            Seed
            <input type="number" min={0} value={model.seed} onChange={(e) => setConfig('model', { seed: num(e.target.value) })} data-testid="dummy-seed" />
          </label>
        )}
        <label>
          API port (0 = any free)
          <input type="number" min={0} max={65535} value={o.apiPort} onChange={(e) => set({ apiPort: num(e.target.value) })} />
        </label>
        <label className="inline" title="on-failure: the agent restarts a rank that dies, with back-off (1 s doubled up to 30 s); requests meanwhile get 503 with Retry-After">
          <input type="checkbox" checked={restart.policy === 'on-failure'} onChange={(e) => setConfig('restart', { policy: e.target.checked ? 'on-failure' : 'never' })} data-testid="restart-policy" />
          Restart a rank that dies
        </label>
        {restart.policy === 'on-failure' && (
          <label>
            Most restarts in a row
            <input type="number" min={0} max={1000} value={restart.maxRestarts} onChange={(e) => setConfig('restart', { maxRestarts: num(e.target.value) })} data-testid="max-restarts" />
          </label>
        )}
      </div>
      <GpuSharingOptions roles={colocated ? ['colocated'] : prefill ? ['prefill', 'attention', 'ffn'] : ['attention', 'ffn']} />
      {prefill && (
        <div className="row" style={{ alignItems: 'flex-end', marginTop: '0.5rem' }} data-testid="pd-options">
          <label title="Prefill rank p listens on this port + p for the attention ranks' KV transfers">
            Prefill KV port (rank p: port + p)
            <input type="number" min={1} max={65535} value={afd.pd.port} onChange={(e) => setAfd({ pd: { ...afd.pd, port: num(e.target.value) } })} data-testid="pd-port" />
          </label>
          <label title="Shorter prompts are prefilled on the attention rank itself (a transfer would cost more than it saves)">
            Shortest prompt sent to a prefill rank (tokens)
            <input type="number" min={1} value={afd.pd.minPromptTokens} onChange={(e) => setAfd({ pd: { ...afd.pd, minPromptTokens: num(e.target.value) } })} data-testid="pd-min-prompt" />
          </label>
          <label title="peer: ranks on one host copy the KV from the prefill rank's memory (only block ids on the wire), a link that cannot is not used; tcp: bytes over the socket; auto: peer where it can, else tcp">
            KV transport
            <select value={afd.pd.transport} onChange={(e) => setAfd({ pd: { ...afd.pd, transport: e.target.value as PdTransport } })} data-testid="pd-transport">
              {PD_TRANSPORTS.map((t) => (
                <option key={t} value={t}>
                  {t}
                </option>
              ))}
            </select>
          </label>
        </div>
      )}
      {!colocated && (
        <>
          <div className="row" style={{ alignItems: 'flex-end', marginTop: '0.5rem' }}>
            <label>
              Connector
              <select value={afd.connector} onChange={(e) => setAfd({ connector: e.target.value as AfdConnector })}>
                {AFD_CONNECTORS.map((c) => (
                  <option key={c} value={c}>
                    {c}: {transportInfo(c).summary}
                  </option>
                ))}
              </select>
            </label>
            <label>
              Rendezvous base port
              <input type="number" min={1} max={65535} value={afd.port} onChange={(e) => setAfd({ port: num(e.target.value) })} />
            </label>
            <label>
              Step deadline (ms)
              <input type="number" min={1} value={afd.stepDeadlineMs} onChange={(e) => setAfd({ stepDeadlineMs: num(e.target.value) })} />
            </label>
            <label className="inline">
              <input type="checkbox" checked={afd.computeGateOnAttention} onChange={(e) => setAfd({ computeGateOnAttention: e.target.checked })} />
              <span style={{ color: 'var(--text)' }}>Router (gate) on attention</span>
            </label>
            <label className="inline" title="Each FFN rank holds 1/F of the MoE experts; the FFN ranks exchange tokens every MoE layer">
              <input type="checkbox" checked={afd.enableExpertParallel} onChange={(e) => setAfd({ enableExpertParallel: e.target.checked })} data-testid="expert-parallel" />
              <span style={{ color: 'var(--text)' }}>Expert parallelism (split experts over the FFN ranks)</span>
            </label>
            <label title="What carries the FFN ranks' token exchange: tcp (host memory, any hosts; eager FFN steps), peer (GPU memory through CUDA IPC: CUDA FFN ranks of one host), nccl (GPU memory over NCCL: CUDA FFN ranks on GPUs of their own, any hosts); peer and nccl keep FFN steps CUDA graphs; auto (peer under connector peer, nccl under connector nccl, else tcp)">
              Expert exchange
              <select value={afd.epTransport} disabled={!afd.enableExpertParallel} onChange={(e) => setAfd({ epTransport: e.target.value as EpTransport })} data-testid="ep-transport">
                {EP_TRANSPORTS.map((t) => (
                  <option key={t} value={t}>
                    {t === 'auto' ? 'auto (the connector\'s transport)' : `${t}: ${transportInfo(t).summary}`}
                  </option>
                ))}
              </select>
            </label>
          </div>
          <div className="row" style={{ alignItems: 'flex-end', marginTop: '0.5rem' }}>
            <label className="inline">
              <input type="checkbox" checked={afd.dbo.enabled} onChange={(e) => setAfd({ dbo: { ...afd.dbo, enabled: e.target.checked } })} data-testid="dbo-enabled" />
              <span style={{ color: 'var(--text)' }}>Dual-batch overlap</span>
            </label>
            <label>
              DBO decode threshold (tokens)
              <input type="number" min={1} value={afd.dbo.decodeTokenThreshold} disabled={!afd.dbo.enabled} onChange={(e) => setAfd({ dbo: { ...afd.dbo, decodeTokenThreshold: num(e.target.value) } })} />
            </label>
            <label>
              DBO prefill threshold (tokens)
              <input type="number" min={1} value={afd.dbo.prefillTokenThreshold} disabled={!afd.dbo.enabled} onChange={(e) => setAfd({ dbo: { ...afd.dbo, prefillTokenThreshold: num(e.target.value) } })} />
            </label>
          </div>
          <div className="row" style={{ alignItems: 'flex-end', marginTop: '0.5rem' }}>
            <label>
              CUDA graphs
              <select value={afd.cudaGraph.policy} onChange={(e) => setAfd({ cudaGraph: { ...afd.cudaGraph, policy: e.target.value as 'off' | 'decode-only' } })}>
                <option value="decode-only">decode-only</option>
                <option value="off">off</option>
              </select>
            </label>
            <label>
              Graph batch buckets (tokens per stage)
              <input value={o.graphBuckets} disabled={afd.cudaGraph.policy === 'off'} onChange={(e) => set({ graphBuckets: e.target.value })} size={40} />
            </label>
          </div>
        </>
      )}
    </fieldset>
  );
}
