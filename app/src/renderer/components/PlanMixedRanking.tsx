/**
 * A mixed cluster's ranking, as `afd-agent plan --gpus h200:8,h100:16` reports it
 * (agent/src/plan/heteroPlan.ts): each kind and where its costs come from, the link, the
 * reason the top candidate wins, and the candidates: which card serves attention and which
 * the FFN, the xAyF shape, micro-batches, batch, TPOT, tokens/s per GPU of the whole cluster
 * (idle GPUs count) and, with prices, per unit of price of the GPUs in use. "Use" fills the
 * Topology screen where the console can launch the candidate, and says why not elsewhere.
 */
import { describeHeteroRow, type HeteroRow } from '@afd/shared';
import { usePlan } from '../AppContext.js';
import { mixedNotLaunchable } from '../plan/mixedDraft.js';
import { Banner } from './Banner.js';
import { PlanUseButton } from './PlanUseButton.js';

/** "2A1F x2 + 2 h100 colocated" or "colocated: 2 h200 + 2 h100": the shape without the role cards (their own columns). */
function shapeText(r: HeteroRow): string {
  const beside = Object.entries(r.gpus).filter(([, g]) => g.colocated > 0).map(([card, g]) => `${g.colocated} ${card}`);
  if (r.kind === 'colocated') return `colocated: ${beside.join(' + ')}`;
  return `${r.topology}${r.replicas > 1 ? ` x${r.replicas}` : ''}${beside.length > 0 ? ` + ${beside.join(' + ')} colocated` : ''}`;
}

const idleText = (r: HeteroRow): string => Object.entries(r.gpus).filter(([, g]) => g.idle > 0).map(([card, g]) => `${g.idle} ${card}`).join(', ') || '-';

export function PlanMixedRanking({ onUse }: { onUse: (r: HeteroRow) => void }) {
  const result = usePlan((s) => s.mixedResult);
  if (!result) return null;
  const priced = result.cards.every((c) => c.price !== null);
  const winner = result.rows[0];
  const head = ['#', 'attention', 'FFN', 'shape', 'micro-batches', 'batch/rank', 'TPOT ms', 'tok/s', 'tok/s/GPU', ...(priced ? ['tok/s/price'] : []), 'idle GPUs', ''];
  return (
    <>
      <div className="small muted" data-testid="plan-mixed-cards" style={{ flexShrink: 0 }}>
        {result.cards.map((c) => (
          <div key={c.card} title={c.costs} style={{ overflow: 'hidden', textOverflow: 'ellipsis', whiteSpace: 'nowrap' }}>
            <span className="mono">{c.card}</span>: {c.gpus} x {c.label}
            {c.price !== null ? `, price ${c.price}` : ''}; costs: {c.costs}
          </div>
        ))}
        <div title={result.linkSource} style={{ overflow: 'hidden', textOverflow: 'ellipsis', whiteSpace: 'nowrap' }}>
          link: {result.linkSource}. Predicted by the step simulator; tok/s/GPU counts every GPU of the cluster, tok/s/price only those in use; memory capacity is not modelled.
        </div>
      </div>
      <div className="row" style={{ flexShrink: 0 }}>
        <div style={{ flex: 1, minWidth: 0 }}>
          <Banner kind={result.useAfd ? 'ok' : winner ? 'info' : 'warn'} message={result.reason} testId="plan-reason" />
        </div>
        {winner && (
          <button className="btn primary" data-testid="plan-use-winner" onClick={() => onUse(winner)} disabled={mixedNotLaunchable(winner) !== null} title={mixedNotLaunchable(winner) ?? `Fill the Topology screen with ${describeHeteroRow(winner)}`}>
            Use {winner.kind === 'afd' ? winner.topology : 'colocated'}
          </button>
        )}
      </div>
      {result.rows.length > 0 && (
        <div className="panel" data-testid="plan-table-wrap" style={{ flexShrink: 0, maxHeight: '35vh', overflow: 'auto', padding: 0 }}>
          <table className="small" data-testid="plan-mixed-table">
            <thead style={{ position: 'sticky', top: 0, background: 'var(--bg-raised)' }}>
              <tr>
                {head.map((h) => (
                  <th key={h}>{h}</th>
                ))}
              </tr>
            </thead>
            <tbody>
              {result.rows.map((r, i) => {
                const why = mixedNotLaunchable(r);
                return (
                  <tr key={`${r.attentionCard}-${r.ffnCard}-${r.topology}-${r.stages}`} data-testid={`plan-row-${i}`} data-kind={r.kind} data-topology={r.topology} title={describeHeteroRow(r)}>
                    <td className="mono">{i + 1}</td>
                    <td className="mono" data-testid={`plan-attention-${i}`}>{r.attentionCard ?? '-'}</td>
                    <td className="mono" data-testid={`plan-ffn-${i}`}>{r.ffnCard ?? '-'}</td>
                    <td>{shapeText(r)}</td>
                    <td className="mono">{r.kind === 'afd' ? r.stages : '-'}</td>
                    <td className="mono">{r.batchPerRank}</td>
                    <td className="mono">{r.tpotMs.toFixed(2)}</td>
                    <td className="mono">{Math.round(r.tokensPerS)}</td>
                    <td className="mono">{r.tokensPerSPerGpu.toFixed(1)}</td>
                    {priced && (
                      <td className="mono" data-testid={`plan-per-price-${i}`}>
                        {(r.tokensPerSPerPrice ?? 0).toFixed(1)}
                      </td>
                    )}
                    <td className="mono">{idleText(r)}</td>
                    <td>
                      <PlanUseButton index={i} notLaunchable={why} label={describeHeteroRow(r)} onUse={() => onUse(r)} />
                    </td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        </div>
      )}
    </>
  );
}
