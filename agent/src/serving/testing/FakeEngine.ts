/**
 * A fake engine for unit tests of the serving layer (the engine boundary is the one thing
 * unit tests may fake). It checks every plan the way the real engine relies on it: offsets,
 * positions, block tables, and that each sequence's earlier KV slots were written by that
 * same sequence at the same positions (so a wrong block table after preemption fails loudly).
 * Tokens come from `nextToken`, deterministic by default.
 */
import type { RankStats, StepPlan, StepResult } from '@afd/shared';
import { emptyRankStats } from '@afd/shared';
import type { EngineLike, EngineModelInfo } from '../engineLike.js';

export interface FakeEngineOptions extends Partial<EngineModelInfo> {
  /** Picks the token sampled for a sequence; default cycles through `tokens`. */
  nextToken?: (ctx: { lastTokenId: number; position: number; seed: number }) => number;
  /** Token ids the default nextToken cycles through. */
  tokens?: number[];
  /** Simulated compute time per step in milliseconds. */
  stepDelayMs?: number;
}

export class FakeEngine implements EngineLike {
  readonly info: EngineModelInfo;
  steps = 0;
  plans: StepPlan[] = [];
  /** Makes the next step throw (tests engine failures). */
  failNext: Error | null = null;
  private readonly slotSeed: Float64Array;
  private readonly slotPos: Int32Array;

  constructor(private readonly opts: FakeEngineOptions = {}) {
    this.info = {
      vocabSize: opts.vocabSize ?? 151_936,
      eosTokenIds: opts.eosTokenIds ?? [151_645],
      maxModelLen: opts.maxModelLen ?? 4096,
      numKvBlocks: opts.numKvBlocks ?? 256,
      kvBlockSize: opts.kvBlockSize ?? 16,
    };
    const slots = this.info.numKvBlocks * this.info.kvBlockSize;
    this.slotSeed = new Float64Array(slots).fill(-1);
    this.slotPos = new Int32Array(slots).fill(-1);
  }

  async step(plan: StepPlan): Promise<StepResult> {
    if (this.opts.stepDelayMs) await new Promise((r) => setTimeout(r, this.opts.stepDelayMs));
    else await Promise.resolve();
    if (this.failNext) {
      const err = this.failNext;
      this.failNext = null;
      throw err;
    }
    this.steps++;
    this.plans.push(plan);
    if (this.plans.length > 64) this.plans.shift();
    const out = new Int32Array(plan.numSeqs);
    const bs = this.info.kvBlockSize;
    const owned = new Set<number>();
    for (let i = 0; i < plan.numSeqs; i++) {
      const from = plan.tokenOffsets[i]!;
      const to = plan.tokenOffsets[i + 1]!;
      if (to <= from) throw new Error(`plan: sequence ${i} has no tokens`);
      const seed = plan.seeds[i]!;
      const ctx = plan.contextLens[i]!;
      const table = plan.blockTables.subarray(i * plan.maxBlocksPerSeq, (i + 1) * plan.maxBlocksPerSeq);
      const slot = (pos: number): number => {
        const block = table[Math.floor(pos / bs)];
        if (block === undefined || block < 0 || block >= this.info.numKvBlocks) throw new Error(`plan: sequence ${i} has no valid block for position ${pos}`);
        return block * bs + (pos % bs);
      };
      for (let b = 0; b < Math.ceil(ctx / bs); b++) {
        if (owned.has(table[b]!)) throw new Error(`plan: block ${table[b]} is used by two sequences`);
        owned.add(table[b]!);
      }
      const start = plan.positions[from]!;
      if (plan.positions[to - 1]! + 1 !== ctx) throw new Error(`plan: sequence ${i} ends at ${plan.positions[to - 1]} but contextLen is ${ctx}`);
      for (let p = 0; p < start; p++) {
        const s = slot(p);
        if (this.slotSeed[s] !== seed || this.slotPos[s] !== p) throw new Error(`plan: sequence ${i} reads KV position ${p} that it never wrote (stale block table)`);
      }
      for (let t = from; t < to; t++) {
        if (plan.positions[t] !== start + (t - from)) throw new Error(`plan: positions of sequence ${i} are not consecutive`);
        const s = slot(plan.positions[t]!);
        this.slotSeed[s] = seed;
        this.slotPos[s] = plan.positions[t]!;
      }
      if (plan.sampleMask[i]) out[i] = this.pick(plan.tokenIds[to - 1]!, ctx, seed);
    }
    return { tokenIds: out, stepTimeMs: this.opts.stepDelayMs ?? 0 };
  }

  private pick(lastTokenId: number, position: number, seed: number): number {
    if (this.opts.nextToken) return this.opts.nextToken({ lastTokenId, position, seed });
    const tokens = this.opts.tokens ?? [9707, 1879, 11, 220, 99489];
    return tokens[(position + seed) % tokens.length]!;
  }

  stats(): RankStats {
    const s = emptyRankStats('colocated', 0, 2, 1);
    return { ...s, steps: this.steps };
  }

  async close(): Promise<void> {}
}
