/**
 * The planner's search over a cluster of several card kinds (`--gpus h200:8,h100:16`):
 * which card serves which role. Candidates: every kind running colocated replicas; and for
 * every ordered pair of kinds (attention on A, FFN on F, A = F allowed) every xAyF (one GPU
 * per rank, x >= y) with each micro-batch count, replicated as often as both kinds allow,
 * the GPUs left over running colocated replicas of their kind (idle where their kind cannot
 * meet the target alone). Each at the largest power-of-two batch per attention rank whose
 * predicted TPOT meets the target and whose ranks fit their cards (each kind's memory model,
 * when it has one: memory.ts, as in search.ts). Ranked by tokens/s per GPU of the whole cluster (idle
 * GPUs count, as in search.ts); with prices, also by tokens/s per unit of price of the GPUs
 * in use (idle ones can be handed back).
 */
import type { LayerCosts } from './costs.js';
import { attentionNeed, doesNotFit, ffnNeed, type MemoryModel } from './memory.js';
import { mixedCosts } from './mixedCosts.js';
import { powersOfTwo, searchPlans } from './search.js';
import { simulateAfd, type StepPrediction } from './stepSimulator.js';

export interface CardPool {
  /** Card name (cards.ts), the key of --gpus and --price. */
  card: string;
  gpus: number;
  /** Price of one GPU of this kind per unit of time (any currency, the same unit for every kind). */
  pricePerGpu?: number;
  /** This card's per-layer costs over the cluster's link. */
  costs: LayerCosts;
  /** Memory capacity of one GPU of this kind (memory.ts); absent or null: not modelled. */
  memory?: MemoryModel | null;
}

export interface HeteroQuery {
  tpotMs: number;
  context: number;
  /** Batches per attention rank (or colocated replica) to try: powers of two up to it. */
  maxBatch: number;
  stageCounts: number[];
  /** Largest x of xAyF to try (default 32). */
  maxRanks?: number;
}

export interface HeteroRow {
  kind: 'afd' | 'colocated';
  attentionCard: string | null;
  ffnCard: string | null;
  topology: string;
  attention: number;
  ffn: number;
  stages: number;
  replicas: number;
  batchPerRank: number;
  /** TPOT of the AFD replicas (colocated rows: the slowest kind's). */
  tpotMs: number;
  /** GPUs of each kind in the AFD replicas, in colocated replicas beside them, and idle. */
  gpus: Record<string, { afd: number; colocated: number; idle: number }>;
  tokensPerS: number;
  /** Over every GPU of the cluster, idle ones included. */
  tokensPerSPerGpu: number;
  /** Over the price of the GPUs in use; null without --price. */
  tokensPerSPerPrice: number | null;
}

export interface HeteroResult {
  rows: HeteroRow[];
  /** The best row by tokens/s per unit of price (null without prices). */
  bestByPrice: HeteroRow | null;
  useAfd: boolean;
  reason: string;
}

/** Tokens/s per GPU, batch and TPOT of colocated replicas of one kind at the target; null if none meets it. */
function colocatedRate(pool: CardPool, q: HeteroQuery): { perGpu: number; batch: number; tpotMs: number } | null {
  const row = searchPlans(pool.costs, { gpus: 1, tpotMs: q.tpotMs, context: q.context, maxBatch: q.maxBatch, stageCounts: q.stageCounts, memory: pool.memory ?? null })[0];
  return row ? { perGpu: row.tokensPerSPerGpu, batch: row.batchPerRank, tpotMs: row.tpotMs } : null;
}

/** Whether an attention rank on `a` at `batch` and an FFN rank on `f` fit their cards (true where memory is not modelled). */
function afdFits(a: CardPool, f: CardPool, batch: number, context: number): boolean {
  if (a.memory && doesNotFit(a.memory, [{ role: 'attention rank', need: attentionNeed(a.memory, batch, context) }])) return false;
  return !(f.memory && doesNotFit(f.memory, [{ role: 'FFN rank', need: ffnNeed(f.memory, 1) }]));
}

/** The largest-throughput batch of one AFD shape that meets the target and fits. */
function bestAfd(costs: LayerCosts, a: CardPool, f: CardPool, x: number, y: number, stages: number, q: HeteroQuery): { p: StepPrediction; batch: number } | null {
  let best: { p: StepPrediction; batch: number } | null = null;
  for (const batch of powersOfTwo(q.maxBatch).filter((b) => b >= stages)) {
    if (!afdFits(a, f, batch, q.context)) break;
    const p = simulateAfd(costs, { attention: x, ffn: y, stages }, { batchPerRank: batch, context: q.context });
    if (p.tpotMs <= q.tpotMs && (!best || p.tokensPerS > best.p.tokensPerS)) best = { p, batch };
  }
  return best;
}

export function searchHetero(pools: CardPool[], q: HeteroQuery): HeteroResult {
  if (pools.length === 0) throw new Error('no GPUs: --gpus names none');
  const total = pools.reduce((s, p) => s + p.gpus, 0);
  const priced = pools.every((p) => p.pricePerGpu !== undefined);
  const coloc = new Map(pools.map((p) => [p.card, colocatedRate(p, q)]));
  // Fill a row's remaining GPUs with colocated replicas of their kind and price the whole.
  const finish = (base: Omit<HeteroRow, 'gpus' | 'tokensPerS' | 'tokensPerSPerGpu' | 'tokensPerSPerPrice'>, afdTokensPerS: number, afdGpus: Map<string, number>): HeteroRow => {
    let tokensPerS = afdTokensPerS;
    let price = 0;
    let tpotMs = base.tpotMs;
    const gpus: HeteroRow['gpus'] = {};
    for (const p of pools) {
      const afd = afdGpus.get(p.card) ?? 0;
      const rate = coloc.get(p.card);
      const left = p.gpus - afd;
      const colocated = rate ? left : 0;
      if (rate && colocated > 0) {
        tokensPerS += rate.perGpu * colocated;
        if (base.kind === 'colocated') tpotMs = Math.max(tpotMs, rate.tpotMs);
      }
      gpus[p.card] = { afd, colocated, idle: left - colocated };
      price += (afd + colocated) * (p.pricePerGpu ?? 0);
    }
    return { ...base, tpotMs, gpus, tokensPerS, tokensPerSPerGpu: tokensPerS / total, tokensPerSPerPrice: priced && price > 0 ? tokensPerS / price : null };
  };
  const rows: HeteroRow[] = [];
  if ([...coloc.values()].some((r) => r)) {
    const batch = Math.max(...[...coloc.values()].map((r) => r?.batch ?? 0));
    rows.push(finish({ kind: 'colocated', attentionCard: null, ffnCard: null, topology: 'colocated', attention: 0, ffn: 0, stages: 1, replicas: 0, batchPerRank: batch, tpotMs: 0 }, 0, new Map()));
  }
  const maxRanks = q.maxRanks ?? 32;
  for (const a of pools) {
    for (const f of pools) {
      const costs = a === f ? a.costs : mixedCosts(a.costs, f.costs);
      for (let x = 1; x <= Math.min(maxRanks, a.gpus); x++) {
        for (let y = 1; y <= x; y++) {
          const replicas = a === f ? Math.floor(a.gpus / (x + y)) : Math.min(Math.floor(a.gpus / x), Math.floor(f.gpus / y));
          if (replicas < 1) continue;
          for (const stages of q.stageCounts) {
            const best = bestAfd(costs, a, f, x, y, stages, q);
            if (!best) continue;
            const used = new Map<string, number>(a === f ? [[a.card, replicas * (x + y)]] : [[a.card, replicas * x], [f.card, replicas * y]]);
            rows.push(finish({ kind: 'afd', attentionCard: a.card, ffnCard: f.card, topology: `${x}A${y}F`, attention: x, ffn: y, stages, replicas, batchPerRank: best.batch, tpotMs: best.p.tpotMs }, best.p.tokensPerS * replicas, used));
          }
        }
      }
    }
  }
  rows.sort((r, s) => s.tokensPerSPerGpu - r.tokensPerSPerGpu);
  const bestByPrice = priced && rows.length ? rows.reduce((b, r) => ((r.tokensPerSPerPrice ?? 0) > (b.tokensPerSPerPrice ?? 0) ? r : b)) : null;
  return { rows, bestByPrice, ...explain(rows, bestByPrice, q) };
}

export function describeHeteroRow(r: HeteroRow): string {
  const rest = Object.entries(r.gpus).filter(([, g]) => g.colocated > 0).map(([card, g]) => `${g.colocated} ${card}`);
  const idle = Object.entries(r.gpus).filter(([, g]) => g.idle > 0).map(([card, g]) => `${g.idle} ${card} idle`);
  const tail = idle.length ? `; ${idle.join(', ')}` : '';
  if (r.kind === 'colocated') return `colocated: ${rest.join(' + ')}${tail}`;
  const shape = `${r.topology}${r.stages === 2 ? ' DBO' : r.stages > 2 ? ` ${r.stages}mb` : ''}${r.replicas > 1 ? ` x${r.replicas}` : ''}`;
  return `A on ${r.attentionCard}, F on ${r.ffnCard}: ${shape}${rest.length ? ` + colocated ${rest.join(' + ')}` : ''}${tail}`;
}

function explain(rows: HeteroRow[], byPrice: HeteroRow | null, q: HeteroQuery): { useAfd: boolean; reason: string } {
  const w = rows[0];
  if (!w) return { useAfd: false, reason: `nothing meets TPOT <= ${q.tpotMs} ms on any card or pairing: relax --tpot-ms or use faster hardware` };
  const fmt = (v: number) => v.toFixed(v >= 100 ? 0 : 1);
  const coloc = rows.find((r) => r.kind === 'colocated');
  const vs = w === coloc ? '' : coloc ? `, ${(w.tokensPerSPerGpu / coloc.tokensPerSPerGpu).toFixed(2)}x colocated replicas of every kind (${fmt(coloc.tokensPerSPerGpu)})` : '; colocated replicas cannot meet the target';
  const afd = rows.find((r) => r.kind === 'afd');
  const lead = w.kind === 'colocated'
    ? `do not use AFD here: ${describeHeteroRow(w)} give ${fmt(w.tokensPerSPerGpu)} tok/s per GPU${afd ? `, ${(w.tokensPerSPerGpu / afd.tokensPerSPerGpu).toFixed(2)}x the best AFD plan (${describeHeteroRow(afd)})` : ''}`
    : `use AFD: ${describeHeteroRow(w)} at batch ${w.batchPerRank} per attention rank gives ${fmt(w.tokensPerSPerGpu)} tok/s per GPU at TPOT ${w.tpotMs.toFixed(2)} ms${vs}`;
  const price = byPrice ? `; per unit of price the best is ${byPrice === w ? 'the same plan' : describeHeteroRow(byPrice)} (${fmt(byPrice.tokensPerSPerPrice ?? 0)} tok/s per price unit)` : '';
  return { useAfd: w.kind === 'afd', reason: lead + price };
}
