/**
 * The planner's search: every way to serve on N GPUs that the simulator can price —
 * colocated replicas, and xAyF (x >= y, x + y <= N) replicated as often as it fits, with
 * 1, 2 (DBO) or more micro-batches — each at the largest batch per attention rank whose
 * predicted TPOT meets the target; ranked by output tokens/s per GPU of the whole cluster
 * (GPUs left idle count), with one line on why the winner wins.
 */
import type { LayerCosts } from './costs.js';
import { simulateAfd, simulateColocated, type StepPrediction } from './stepSimulator.js';

export interface PlanQuery {
  gpus: number;
  tpotMs: number;
  context: number;
  /** Largest batch per attention rank (or per replica) to try; batches are powers of two up to it. */
  maxBatch: number;
  /** Micro-batch counts to try for AFD. */
  stageCounts: number[];
}

export interface PlanRow {
  kind: 'afd' | 'colocated';
  /** "2A1F" or "colocated". */
  topology: string;
  attention: number;
  ffn: number;
  stages: number;
  replicas: number;
  gpusUsed: number;
  batchPerRank: number;
  tpotMs: number;
  /** Output tokens/s of the whole cluster. */
  tokensPerS: number;
  /** tokensPerS over the cluster's GPUs (idle ones included). */
  tokensPerSPerGpu: number;
  ffnBusy: number;
}

export interface PlanResult {
  rows: PlanRow[];
  reason: string;
  useAfd: boolean;
}

const powersOfTwo = (max: number): number[] => Array.from({ length: Math.floor(Math.log2(max)) + 1 }, (_, i) => 2 ** i);

/** The best row of one shape over the batch grid: the largest tokens/s whose TPOT meets the target. */
function bestBatch(q: PlanQuery, minBatch: number, make: (batch: number) => StepPrediction, row: (p: StepPrediction, batch: number) => PlanRow): PlanRow | null {
  let best: PlanRow | null = null;
  for (const batch of powersOfTwo(q.maxBatch).filter((b) => b >= minBatch)) {
    const p = make(batch);
    if (p.tpotMs > q.tpotMs) continue;
    const r = row(p, batch);
    if (!best || r.tokensPerS > best.tokensPerS) best = r;
  }
  return best;
}

export function searchPlans(costs: LayerCosts, q: PlanQuery): PlanRow[] {
  const rows: PlanRow[] = [];
  const w = (batch: number) => ({ batchPerRank: batch, context: q.context });
  const colocated = bestBatch(q, 1, (b) => simulateColocated(costs, w(b)), (p, b) => ({
    kind: 'colocated', topology: 'colocated', attention: 0, ffn: 0, stages: 1, replicas: q.gpus, gpusUsed: q.gpus, batchPerRank: b,
    tpotMs: p.tpotMs, tokensPerS: p.tokensPerS * q.gpus, tokensPerSPerGpu: p.tokensPerS, ffnBusy: p.ffnBusy,
  }));
  if (colocated) rows.push(colocated);
  for (let x = 1; x < q.gpus; x++) {
    for (let y = 1; y <= Math.min(x, q.gpus - x); y++) {
      const replicas = Math.floor(q.gpus / (x + y));
      for (const stages of q.stageCounts) {
        const r = bestBatch(q, stages, (b) => simulateAfd(costs, { attention: x, ffn: y, stages }, w(b)), (p, b) => ({
          kind: 'afd', topology: `${x}A${y}F`, attention: x, ffn: y, stages, replicas, gpusUsed: replicas * (x + y), batchPerRank: b,
          tpotMs: p.tpotMs, tokensPerS: p.tokensPerS * replicas, tokensPerSPerGpu: (p.tokensPerS * replicas) / q.gpus, ffnBusy: p.ffnBusy,
        }));
        if (r) rows.push(r);
      }
    }
  }
  return rows.sort((a, b) => b.tokensPerSPerGpu - a.tokensPerSPerGpu || a.gpusUsed - b.gpusUsed);
}

export const describeRow = (r: PlanRow): string =>
  r.kind === 'colocated' ? `${r.replicas} colocated replicas` : `${r.topology}${r.stages === 2 ? ' with DBO' : r.stages > 2 ? ` with ${r.stages} micro-batches` : ''}${r.replicas > 1 ? ` x${r.replicas}` : ''}`;

/** The ranking and why the winner wins (or that nothing meets the target). */
export function plan(costs: LayerCosts, q: PlanQuery): PlanResult {
  const rows = searchPlans(costs, q);
  const winner = rows[0];
  if (!winner) return { rows, useAfd: false, reason: `nothing meets TPOT <= ${q.tpotMs} ms at batch 1 (colocated batch 1 is predicted at ${simulateColocated(costs, { batchPerRank: 1, context: q.context }).tpotMs.toFixed(2)} ms): relax --tpot-ms or use faster hardware` };
  const rival = rows.find((r) => r.kind !== winner.kind);
  const fmt = (v: number) => v.toFixed(v >= 100 ? 0 : 1);
  if (winner.kind === 'colocated') {
    const vs = rival ? `, ${(winner.tokensPerSPerGpu / rival.tokensPerSPerGpu).toFixed(2)}x the best AFD topology (${describeRow(rival)}, ${fmt(rival.tokensPerSPerGpu)} tok/s per GPU)` : '; no AFD topology meets the target';
    return { rows, useAfd: false, reason: `do not use AFD here: ${describeRow(winner)} give ${fmt(winner.tokensPerSPerGpu)} tok/s per GPU at TPOT ${winner.tpotMs.toFixed(2)} ms${vs}` };
  }
  const vs = rival ? `${(winner.tokensPerSPerGpu / rival.tokensPerSPerGpu).toFixed(2)}x the tok/s per GPU of ${describeRow(rival)} (${fmt(rival.tokensPerSPerGpu)})` : 'colocated replicas cannot meet the target';
  return { rows, useAfd: true, reason: `use AFD: ${describeRow(winner)} at batch ${winner.batchPerRank} per attention rank gives ${fmt(winner.tokensPerSPerGpu)} tok/s per GPU at TPOT ${winner.tpotMs.toFixed(2)} ms, ${vs}; the FFN rank is busy ${Math.round(winner.ffnBusy * 100)}% of the step` };
}
