/**
 * The Topology screen's expert placement line per FFN rank: with expert parallelism,
 * FFN rank f of F holds the experts e with floor(e * F / E) = f (shared expertPlacement);
 * without it, every FFN rank holds them all. E comes from the chosen model when an agent
 * reported it (inventory), else the rule is shown as a formula.
 */
import { expertRanges, formatExpertRange, type AgentInfo } from '@afd/shared';

/** Name of the built-in model folder (the empty model directory). */
const BUILT_IN_MODEL = 'tiny-qwen3-moe';

export interface ExpertPlacementPlan {
  /** One line per FFN rank ("F0: experts 0-3 of 8"); empty when there is nothing per rank to say. */
  rows: string[];
  /** One sentence about the placement as a whole. */
  note: string;
}

/** Routed experts of the chosen model as an agent reported it; null when unknown (or dense). */
export function modelExperts(agents: readonly AgentInfo[], modelDir: string): number | null {
  const dir = modelDir.trim();
  for (const a of agents) {
    for (const m of a.inventory?.models ?? []) {
      if ((dir === '' ? m.name === BUILT_IN_MODEL : m.dir === dir) && m.numExperts) return m.numExperts;
    }
  }
  return null;
}

export function plannedExpertPlacement(numFfn: number, expertParallel: boolean, numExperts: number | null): ExpertPlacementPlan {
  if (!expertParallel) return { rows: [], note: 'Expert parallelism off: every FFN rank holds all the experts.' };
  if (numFfn < 2) return { rows: [], note: 'One FFN rank holds every expert: expert parallelism needs two or more FFN ranks.' };
  if (numExperts === null) {
    return {
      rows: Array.from({ length: numFfn }, (_, f) => `F${f}: experts e with ⌊e·${numFfn}/E⌋ = ${f}`),
      note: `Each FFN rank holds about 1/${numFfn} of the E experts of every MoE layer (E comes from the model's config.json); dense layers and the router stay on every FFN rank.`,
    };
  }
  return {
    rows: expertRanges(numExperts, numFfn).map((r, f) => `F${f}: ${formatExpertRange(r)} of ${numExperts}`),
    note: `The ${numExperts} experts of every MoE layer are split over ${numFfn} FFN ranks (e → ⌊e·${numFfn}/${numExperts}⌋); dense layers and the router stay on every FFN rank.`,
  };
}
