/**
 * A mixed cluster's candidate (heteroSearch row) as a Topology screen draft. The console
 * launches one xAyF, or colocated replicas of one serving config, on devices the user
 * assigns; it does not know card kinds, so the draft's note says which kind each role
 * belongs on and what of the plan it leaves out (copies, colocated GPUs beside, idle ones).
 */
import { describeHeteroRow, type HeteroRow } from '@afd/shared';
import { PRESETS, type TopologyChoice } from '../stores/topologyDraft.js';
import type { DraftFill } from './planLogic.js';

/** The Topology screen's colocated replicas go up to this many (topologyStore's range). */
const MAX_REPLICAS = 64;

const inUse = (r: HeteroRow, role: 'afd' | 'colocated'): [string, number][] => Object.entries(r.gpus).filter(([, g]) => g[role] > 0).map(([card, g]) => [card, g[role]]);

/** Why a candidate cannot fill the Topology screen (null when it can). */
export function mixedNotLaunchable(r: HeteroRow): string | null {
  if (r.kind === 'afd') return null;
  const kinds = inUse(r, 'colocated');
  if (kinds.length > 1) return `colocated replicas on ${kinds.map(([c]) => c).join(' and ')} run different batches per kind; one launch has one serving config for every replica: take an AFD row, or plan each kind alone`;
  const replicas = kinds[0]?.[1] ?? 0;
  return replicas > MAX_REPLICAS ? `${replicas} replicas: the Topology screen launches up to ${MAX_REPLICAS}` : null;
}

export function draftFromMixedRow(r: HeteroRow): DraftFill | null {
  if (mixedNotLaunchable(r)) return null;
  const label = describeHeteroRow(r);
  const predicted = `batch ${r.batchPerRank} per ${r.kind === 'afd' ? 'attention rank' : 'replica'}, predicted TPOT ${r.tpotMs.toFixed(2)} ms, ${r.tokensPerSPerGpu.toFixed(1)} tok/s per GPU of the cluster`;
  if (r.kind === 'colocated') {
    const [card, replicas] = inUse(r, 'colocated')[0]!;
    return { choice: 'colocated', replicas, note: `From the Plan screen: ${label} (${predicted}). Note: assign ${card} GPUs.` };
  }
  const preset = (PRESETS as readonly string[]).includes(r.topology);
  const extra = [`assign ${r.attentionCard} GPUs to the attention ranks and ${r.ffnCard} GPUs to the FFN ranks`];
  if (r.stages > 2) extra.push(`the plan has ${r.stages} micro-batches; the engine overlaps 2 (DBO), so DBO is on`);
  if (r.replicas > 1) extra.push(`the plan runs ${r.replicas} copies; this launches one`);
  const beside = inUse(r, 'colocated');
  if (beside.length > 0) extra.push(`the colocated replicas beside it (${beside.map(([c, n]) => `${n} ${c}`).join(', ')}) are not launched`);
  return {
    choice: preset ? (r.topology as TopologyChoice) : 'custom',
    ...(preset ? {} : { custom: r.topology }),
    dbo: r.stages >= 2,
    expertParallel: false,
    note: `From the Plan screen: ${label} (${predicted}). Note: ${extra.join('; ')}.`,
  };
}
