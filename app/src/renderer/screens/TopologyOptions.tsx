/** Launch options of the Topology screen: model, API port, connector, DBO, gate, graphs. */
import type { AfdConnector, AgentInfo, LoadFormat } from '@afd/shared';
import { useTopology } from '../AppContext.js';

function num(v: string): number {
  return v.trim() === '' ? Number.NaN : Number(v);
}

export function TopologyOptions({ agents }: { agents: readonly AgentInfo[] }) {
  const o = useTopology((s) => s.options);
  const set = useTopology((s) => s.setOptions);
  const colocated = useTopology((s) => s.choice === 'colocated');
  const models = agents.flatMap((a) => a.inventory?.models ?? []);
  return (
    <fieldset className="panel">
      <legend>Options</legend>
      <div className="row" style={{ alignItems: 'flex-end' }}>
        <label>
          Model directory on the agents (empty = built-in tiny model)
          <input list="model-dirs" value={o.modelDir} onChange={(e) => set({ modelDir: e.target.value })} size={44} placeholder="/models/Qwen3-30B-A3B" data-testid="model-dir" />
          <datalist id="model-dirs">
            {models.map((m) => (
              <option key={m.dir} value={m.dir}>
                {m.name}
              </option>
            ))}
          </datalist>
        </label>
        <label>
          Weights
          <select value={o.loadFormat} onChange={(e) => set({ loadFormat: e.target.value as LoadFormat })} data-testid="load-format">
            <option value="auto">checkpoint (safetensors)</option>
            <option value="dummy">dummy: random, generated on each rank</option>
          </select>
        </label>
        {o.loadFormat === 'dummy' && (
          <label>
            Seed
            <input type="number" min={0} value={o.seed} onChange={(e) => set({ seed: num(e.target.value) })} data-testid="dummy-seed" />
          </label>
        )}
        <label>
          API port (0 = any free)
          <input type="number" min={0} max={65535} value={o.apiPort} onChange={(e) => set({ apiPort: num(e.target.value) })} />
        </label>
      </div>
      {!colocated && (
        <>
          <div className="row" style={{ alignItems: 'flex-end', marginTop: '0.5rem' }}>
            <label>
              Connector
              <select value={o.connector} onChange={(e) => set({ connector: e.target.value as AfdConnector })}>
                <option value="tcp">tcp (CPU / any host)</option>
                <option value="nccl">nccl (GPU, any hosts)</option>
                <option value="peer">peer (GPU, one host: CUDA IPC)</option>
              </select>
            </label>
            <label>
              Rendezvous base port
              <input type="number" min={1} max={65535} value={o.afdPort} onChange={(e) => set({ afdPort: num(e.target.value) })} />
            </label>
            <label>
              Step deadline (ms)
              <input type="number" min={1} value={o.stepDeadlineMs} onChange={(e) => set({ stepDeadlineMs: num(e.target.value) })} />
            </label>
            <label className="inline">
              <input type="checkbox" checked={o.computeGateOnAttention} onChange={(e) => set({ computeGateOnAttention: e.target.checked })} />
              <span style={{ color: 'var(--text)' }}>Router (gate) on attention</span>
            </label>
          </div>
          <div className="row" style={{ alignItems: 'flex-end', marginTop: '0.5rem' }}>
            <label className="inline">
              <input type="checkbox" checked={o.dboEnabled} onChange={(e) => set({ dboEnabled: e.target.checked })} data-testid="dbo-enabled" />
              <span style={{ color: 'var(--text)' }}>Dual-batch overlap</span>
            </label>
            <label>
              DBO decode threshold (tokens)
              <input type="number" min={1} value={o.dboDecodeThreshold} disabled={!o.dboEnabled} onChange={(e) => set({ dboDecodeThreshold: num(e.target.value) })} />
            </label>
            <label>
              DBO prefill threshold (tokens)
              <input type="number" min={1} value={o.dboPrefillThreshold} disabled={!o.dboEnabled} onChange={(e) => set({ dboPrefillThreshold: num(e.target.value) })} />
            </label>
          </div>
          <div className="row" style={{ alignItems: 'flex-end', marginTop: '0.5rem' }}>
            <label>
              CUDA graphs
              <select value={o.graphPolicy} onChange={(e) => set({ graphPolicy: e.target.value as 'off' | 'decode-only' })}>
                <option value="decode-only">decode-only</option>
                <option value="off">off</option>
              </select>
            </label>
            <label>
              Graph batch buckets (tokens per stage)
              <input value={o.graphBuckets} disabled={o.graphPolicy === 'off'} onChange={(e) => set({ graphBuckets: e.target.value })} size={40} />
            </label>
          </div>
        </>
      )}
    </fieldset>
  );
}
