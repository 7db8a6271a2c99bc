/**
 * Synthetic metric snapshots for the dashboard benchmark and unit tests: a topology of
 * attention and FFN ranks whose counters grow the way a busy run's do. Never used for
 * real runs.
 */
import type { FfnLoopState, MetricsSnapshot, WireBases } from '@afd/shared';

export interface SyntheticOptions {
  attentionRanks: number;
  ffnRanks: number;
  numLayers: number;
  numStages: number;
  /** How every rank says its wire times were measured (default one-way both ways, TCP on one host). */
  wireBasis?: WireBases;
  /** Every rank's DBO setting (default: not reported). */
  dbo?: boolean;
}

const LOOP_STATES: FfnLoopState[] = ['waiting-control', 'receiving', 'computing', 'sending'];

/** Prefix-cache tokens an attention rank queries per step: a constant rate, so every window's hit rate is its lifetime one. */
export const SYNTHETIC_PREFIX_QUERIES_PER_STEP = 400;
/** Of those, hits per step of attention rank `rank`: 100, 180, 260, 340, ... (25%, 45%, 65%, 85%, ...; capped at all of them). */
export function syntheticPrefixHitsPerStep(rank: number): number {
  return Math.min(SYNTHETIC_PREFIX_QUERIES_PER_STEP, 100 + 80 * rank);
}

/** Snapshot generator; call `tick(tMs)` for the next snapshot of every rank. */
export class SyntheticMetrics {
  private step = 0;

  constructor(private readonly opts: SyntheticOptions) {}

  tick(tMs: number): MetricsSnapshot[] {
    this.step += 1;
    const { attentionRanks, ffnRanks, numLayers, numStages } = this.opts;
    const out: MetricsSnapshot[] = [];
    const grid = (scale: number, rank: number): number[][] =>
      Array.from({ length: numLayers }, (_, l) =>
        Array.from({ length: numStages }, (_, s) => Math.round(scale * this.step * (1 + ((l * 7 + s * 3 + rank) % 11) / 10))),
      );
    const wire = (rank: number): number[][] =>
      Array.from({ length: numLayers }, (_, l) => Array.from({ length: numStages }, (_, s) => 20 + ((l + s + rank + this.step) % 17) * 3));
    for (const role of ['ffn', 'attention'] as const) {
      const n = role === 'ffn' ? ffnRanks : attentionRanks;
      for (let rank = 0; rank < n; rank++) {
        const isFfn = role === 'ffn';
        out.push({
          timestampMs: tMs,
          stats: {
            role,
            rank,
            steps: this.step,
            stepTimeMs: { last: 8 + ((this.step + rank) % 5), avg: 10 },
            numLayers,
            numStages,
            a2fBytes: grid(4096, rank),
            f2aBytes: grid(4096, rank + 1),
            a2fWireUs: wire(rank),
            f2aWireUs: wire(rank + 2),
            wireBasis: this.opts.wireBasis ?? { a2f: 'one-way', f2a: 'one-way' },
            ...(this.opts.dbo !== undefined ? { dbo: this.opts.dbo } : {}),
            ffnComputeUs: isFfn ? this.step * 900 : 0,
            attnWaitForFfnUs: isFfn ? 0 : this.step * 300,
            graph: { hits: Math.floor(this.step * 0.9), misses: Math.ceil(this.step * 0.1), captures: Math.min(10, this.step) },
            ffnLoop: isFfn
              ? { state: LOOP_STATES[(this.step + rank) % LOOP_STATES.length]!, layer: this.step % numLayers, stage: this.step % numStages, stepsServed: this.step, waitingMs: (this.step % 10) * 0.3 }
              : null,
            kv: isFfn ? null : { blocksUsed: (this.step * 3) % 500, blocksTotal: 512, blocksCached: (this.step * 2) % 300, prefixQueryTokens: this.step * SYNTHETIC_PREFIX_QUERIES_PER_STEP, prefixHitTokens: this.step * syntheticPrefixHitsPerStep(rank) },
          },
          serving: isFfn
            ? null
            : {
                runningRequests: 4 + (this.step % 5),
                waitingRequests: this.step % 3,
                promptTokensTotal: this.step * 64,
                generationTokensTotal: this.step * 16,
                requestsFinishedTotal: Math.floor(this.step / 20),
                outputTokensPerSecond: 150 + 20 * Math.sin(this.step / 10),
                kvUsage: ((this.step * 3) % 500) / 512,
              },
        });
      }
    }
    return out;
  }
}
