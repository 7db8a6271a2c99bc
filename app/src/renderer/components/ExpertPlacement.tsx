/**
 * The Topology screen's expert placement: which experts each FFN rank of the draft will
 * hold (expert parallelism: e -> floor(e * F / E)), and which ones the running FFN ranks
 * report holding.
 */
import type { AgentInfo } from '@afd/shared';
import { useMetrics } from '../AppContext.js';
import { formatBytes } from '../lib/format.js';
import { expertHolders } from '../stores/expertLoad.js';
import { modelExperts, plannedExpertPlacement } from '../stores/expertPlacementPlan.js';

export function ExpertPlacement({ numFfn, expertParallel, modelDir, agents }: { numFfn: number; expertParallel: boolean; modelDir: string; agents: readonly AgentInfo[] }) {
  const model = useMetrics((s) => s.model);
  useMetrics((s) => s.version); // re-render with every fold: the running ranks' holdings
  const plan = plannedExpertPlacement(numFfn, expertParallel, modelExperts(agents, modelDir));
  const running = expertHolders(model);
  return (
    <div className="small" data-testid="expert-placement">
      <div className="muted">{plan.note}</div>
      {plan.rows.map((r) => (
        <div key={r} className="mono">
          {r}
        </div>
      ))}
      {running.length > 0 && (
        <div data-testid="expert-placement-running" style={{ marginTop: '0.25rem' }}>
          <span className="muted">Running now: </span>
          {running.map((h) => (
            <span key={h.label} className="mono" style={{ marginRight: '1rem' }}>
              {h.label} holds e{h.start}–e{h.end - 1} of {h.numExperts}
              {Number.isFinite(h.weightBytes) ? ` (${formatBytes(h.weightBytes)})` : ''}
            </span>
          ))}
        </div>
      )}
    </div>
  );
}
