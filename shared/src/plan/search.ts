/**
 * The planner's search: every way to serve on N GPUs that the simulator can price —
 * colocated replicas, xAyF (x >= y, x + y <= N) replicated as often as it fits with 1, 2
 * (DBO) or more micro-batches, and for an MoE model the FFN ranks as one EP group or not,
 * the gate on either side, and EP-only groups (EP sizes that divide the experts) — each at the largest batch per attention
 * rank whose predicted TPOT meets the target and whose weights + KV fit one GPU (when the
 * memory is known); ranked by output tokens/s per GPU of the whole cluster (GPUs left idle
 * count), with one line on why the winner wins and the shapes dropped for memory.
 */
import type { LayerCosts } from './costs.js';
import { ffnEpNote, simulateEpOnly, splitsExperts } from './expertParallel.js';
import { gateNote, type GateSide } from './gateSide.js';
import { attentionNeed, colocatedNeed, doesNotFit, epRankNeed, ffnNeed, needBytes, type MemoryModel, type RankNeed } from './memory.js';
import { mpsMeasured, type SharedDevice } from './sharedDevice.js';
import { simulateAfd, simulateColocated, type StepPrediction } from './stepSimulator.js';

export interface PlanQuery {
  gpus: number;
  tpotMs: number;
  context: number;
  /** Largest batch per attention rank (or per replica) to try; batches are powers of two up to it. */
  maxBatch: number;
  /** Micro-batch counts to try for AFD. */
  stageCounts: number[];
  /** Memory capacity per GPU (memory.ts); absent or null: not modelled. */
  memory?: MemoryModel | null;
  /** Ranks sharing devices (sharedDevice.ts): cpu (the N "GPUs" are engine threads on that many cores) or mps (xAyF on x GPUs); absent: a GPU per rank. */
  device?: SharedDevice;
  /** Gate sides to try for an MoE model (default both). */
  gateSides?: GateSide[];
}

export interface PlanRow {
  kind: 'afd' | 'colocated' | 'ep';
  /** "2A1F", "colocated" or "EP4". */
  topology: string;
  /** x and y of xAyF; 0 and 0 for colocated; n and n for EP-only (every GPU runs both halves). */
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
  /** EP group size: y for xAyF whose FFN ranks form one group, n for EP-only, else 1. */
  epSize: number;
  /** Where the router runs (MoE models only). */
  gate?: GateSide;
  /** The fullest GPU's weights + KV at this batch, bytes (absent when memory is not modelled). */
  memoryBytesPerGpu?: number;
  /** The assumptions behind this row: scaled EP curve, unmeasured router, batch bounded by memory. */
  notes: string[];
}

/** A shape that cannot run at batch 1 for memory, and why. */
export interface DroppedShape {
  kind: PlanRow['kind'];
  /** As describeRow names it, e.g. "colocated replicas" or "4A2F (FFN EP2)". */
  topology: string;
  reason: string;
}

export interface PlanResult {
  rows: PlanRow[];
  dropped: DroppedShape[];
  reason: string;
  useAfd: boolean;
}

/** One shape to price at each batch: its fixed fields, its prediction and its memory needs per GPU. */
interface Candidate {
  base: Omit<PlanRow, 'batchPerRank' | 'tpotMs' | 'tokensPerS' | 'tokensPerSPerGpu' | 'ffnBusy' | 'memoryBytesPerGpu'>;
  minBatch: number;
  predict(batch: number): StepPrediction;
  needs(batch: number): { role: string; need: RankNeed }[];
}

/** 1, 2, 4, ... up to max: the batch grid of every search. */
export const powersOfTwo = (max: number): number[] => Array.from({ length: Math.floor(Math.log2(max)) + 1 }, (_, i) => 2 ** i);

/** The best row of one shape over the batch grid, or why it cannot run at all (memory). */
function bestBatch(q: PlanQuery, c: Candidate): PlanRow | DroppedShape | null {
  let best: PlanRow | null = null;
  let lastFit = 0;
  for (const batch of powersOfTwo(q.maxBatch).filter((b) => b >= c.minBatch)) {
    const needs = c.needs(batch);
    const why = q.memory ? doesNotFit(q.memory, needs) : null;
    if (why) {
      if (!lastFit) return { kind: c.base.kind, topology: describeRow({ kind: c.base.kind, topology: c.base.topology, stages: 1, replicas: c.base.replicas, epSize: c.base.epSize }), reason: why.includes(' of KV ') ? `${why} at batch ${batch}` : why };
      if (best && best.batchPerRank === lastFit) best.notes.push(`batch bounded by memory (${batch} per rank: ${why})`);
      break;
    }
    lastFit = batch;
    const p = c.predict(batch);
    if (p.tpotMs > q.tpotMs) continue;
    const tokensPerS = p.tokensPerS * c.base.replicas;
    if (best && tokensPerS <= best.tokensPerS) continue;
    const memoryBytesPerGpu = q.memory ? Math.max(...needs.map((n) => needBytes(n.need))) : undefined;
    best = { ...c.base, notes: [...c.base.notes], batchPerRank: batch, tpotMs: p.tpotMs, tokensPerS, tokensPerSPerGpu: tokensPerS / q.gpus, ffnBusy: p.ffnBusy, ...(memoryBytesPerGpu !== undefined ? { memoryBytesPerGpu } : {}) };
  }
  return best;
}

/** Every shape of the query: colocated, xAyF (with EP and gate variants for an MoE model), EP-only groups. */
function candidates(costs: LayerCosts, q: PlanQuery): Candidate[] {
  const out: Candidate[] = [];
  const w = (batch: number) => ({ batchPerRank: batch, context: q.context });
  const m = q.memory;
  const dev = q.device;
  const none = () => [];
  out.push({
    base: { kind: 'colocated', topology: 'colocated', attention: 0, ffn: 0, stages: 1, replicas: q.gpus, gpusUsed: q.gpus, epSize: 1, notes: [] },
    minBatch: 1,
    predict: (b) => simulateColocated(costs, w(b), { ...(dev ? { device: dev } : {}), replicas: q.gpus }),
    needs: m ? (b) => [{ role: 'colocated', need: colocatedNeed(m, b, q.context) }] : none,
  });
  const moe = costs.moe !== undefined;
  const gates: (GateSide | undefined)[] = moe ? (q.gateSides ?? ['ffn', 'attention']) : [undefined];
  const mps = dev?.kind === 'mps';
  for (let x = 1; x <= q.gpus; x++) {
    for (let y = 1; y <= Math.min(x, mps ? x : q.gpus - x); y++) {
      const perReplica = mps ? x : x + y;
      const replicas = Math.floor(q.gpus / perReplica);
      // On a shared CPU the replicas split the cores evenly.
      const device = dev?.kind === 'cpu' ? { kind: 'cpu' as const, cores: dev.cores / replicas } : dev;
      for (const ffnEp of y >= 2 && splitsExperts(costs, y) ? [false, true] : [false]) {
        const ep = ffnEp ? y : 1;
        for (const gate of gates) {
          const notes = [...(ffnEp ? [ffnEpNote(costs, y)] : []), ...(gate ? [gateNote(costs, gate)] : []), ...(dev?.kind === 'mps' && !mpsMeasured(costs, dev) ? [`SM shares: t / share^${dev.alpha} (no profile points)`] : [])];
          for (const stages of q.stageCounts) {
            out.push({
              base: { kind: 'afd', topology: `${x}A${y}F`, attention: x, ffn: y, stages, replicas, gpusUsed: replicas * perReplica, epSize: ep, ...(gate ? { gate } : {}), notes },
              minBatch: stages,
              predict: (b) => simulateAfd(costs, { attention: x, ffn: y, stages, ffnEp, ...(gate ? { gate } : {}) }, w(b), device ? { device } : {}),
              needs: m
                ? (b) => {
                    const a = attentionNeed(m, b, q.context);
                    const f = ffnNeed(m, ep);
                    return mps ? [{ role: 'attention + FFN rank (MPS)', need: { weightBytes: a.weightBytes + f.weightBytes, kvBytes: a.kvBytes } }] : [{ role: 'attention rank', need: a }, { role: 'FFN rank', need: f }];
                  }
                : none,
            });
          }
        }
      }
    }
  }
  // EP-only groups (not simulated on a shared device).
  if (moe && !dev) {
    const sizes = [...new Set([...powersOfTwo(q.gpus).filter((n) => n >= 2), ...(q.gpus >= 2 ? [q.gpus] : [])])].filter((n) => splitsExperts(costs, n));
    for (const n of sizes) {
      const replicas = Math.floor(q.gpus / n);
      out.push({
        base: { kind: 'ep', topology: `EP${n}`, attention: n, ffn: n, stages: 1, replicas, gpusUsed: replicas * n, epSize: n, notes: [ffnEpNote(costs, n)] },
        minBatch: 1,
        predict: (b) => simulateEpOnly(costs, n, w(b)),
        needs: m ? (b) => [{ role: 'EP rank', need: epRankNeed(m, n, b, q.context) }] : none,
      });
    }
  }
  return out;
}

/** Rows meeting the target, best first, and the shapes dropped for memory. */
export function searchAll(costs: LayerCosts, q: PlanQuery): { rows: PlanRow[]; dropped: DroppedShape[] } {
  const rows: PlanRow[] = [];
  const dropped = new Map<string, DroppedShape>();
  for (const c of candidates(costs, q)) {
    const r = bestBatch(q, c);
    if (r && 'reason' in r) dropped.set(r.topology, dropped.get(r.topology) ?? r);
    else if (r) rows.push(r);
  }
  rows.sort((a, b) => b.tokensPerSPerGpu - a.tokensPerSPerGpu || a.gpusUsed - b.gpusUsed);
  return { rows, dropped: [...dropped.values()] };
}

export const searchPlans = (costs: LayerCosts, q: PlanQuery): PlanRow[] => searchAll(costs, q).rows;

/** "4 colocated replicas", "3A1F with DBO x2", "4A2F (FFN EP2), gate on attention", "EP4 x2". */
export function describeRow(r: Pick<PlanRow, 'kind' | 'topology' | 'stages' | 'replicas'> & Partial<Pick<PlanRow, 'epSize' | 'gate'>>): string {
  if (r.kind === 'colocated') return `${r.replicas} colocated replica${r.replicas === 1 ? '' : 's'}`;
  const times = r.replicas > 1 ? ` x${r.replicas}` : '';
  if (r.kind === 'ep') return `${r.topology}${times}`;
  const ep = (r.epSize ?? 1) > 1 ? ` (FFN EP${r.epSize})` : '';
  const stages = r.stages === 2 ? ' with DBO' : r.stages > 2 ? ` with ${r.stages} micro-batches` : '';
  return `${r.topology}${ep}${stages}${r.gate === 'attention' ? ', gate on attention' : ''}${times}`;
}

/** The ranking, the shapes dropped for memory, and why the winner wins (or that nothing meets the target). */
export function plan(costs: LayerCosts, q: PlanQuery): PlanResult {
  const { rows, dropped } = searchAll(costs, q);
  const winner = rows[0];
  if (!winner) {
    const batch1 = simulateColocated(costs, { batchPerRank: 1, context: q.context }).tpotMs.toFixed(2);
    const memory = dropped.length ? `; dropped for memory: ${dropped.map((d) => d.reason).slice(0, 3).join('; ')}` : '';
    return { rows, dropped, useAfd: false, reason: `nothing meets TPOT <= ${q.tpotMs} ms at batch 1 (colocated batch 1 is predicted at ${batch1} ms)${memory}: relax --tpot-ms or use faster hardware` };
  }
  const isAfd = winner.kind === 'afd';
  const rival = rows.find((r) => (r.kind === 'afd') !== isAfd);
  const droppedRival = dropped.find((d) => (d.kind === 'afd') !== isAfd);
  const fmt = (v: number) => v.toFixed(v >= 100 ? 0 : 1);
  if (!isAfd) {
    const vs = rival ? `, ${(winner.tokensPerSPerGpu / rival.tokensPerSPerGpu).toFixed(2)}x the best AFD topology (${describeRow(rival)}, ${fmt(rival.tokensPerSPerGpu)} tok/s per GPU)` : '; no AFD topology meets the target';
    return { rows, dropped, useAfd: false, reason: `do not use AFD here: ${describeRow(winner)} give${winner.kind === 'ep' && winner.replicas <= 1 ? 's' : ''} ${fmt(winner.tokensPerSPerGpu)} tok/s per GPU at TPOT ${winner.tpotMs.toFixed(2)} ms${vs}` };
  }
  const vs = rival
    ? `${(winner.tokensPerSPerGpu / rival.tokensPerSPerGpu).toFixed(2)}x the tok/s per GPU of ${describeRow(rival)} (${fmt(rival.tokensPerSPerGpu)})`
    : droppedRival ? `and nothing else fits (${droppedRival.reason})` : 'colocated replicas cannot meet the target';
  return { rows, dropped, useAfd: true, reason: `use AFD: ${describeRow(winner)} at batch ${winner.batchPerRank} per attention rank gives ${fmt(winner.tokensPerSPerGpu)} tok/s per GPU at TPOT ${winner.tpotMs.toFixed(2)} ms, ${vs}; the FFN rank is busy ${Math.round(winner.ffnBusy * 100)}% of the step` };
}
