/**
 * A fake engine for unit tests of the serving layer (the engine boundary is the one thing
 * unit tests may fake). It checks every plan the way the real engine relies on it: offsets,
 * positions, block tables, and that each sequence's earlier KV slots were written by that
 * same sequence at the same positions (so a wrong block table after preemption fails loudly).
 *
 * Its model prefers the token `nextToken` picks (deterministic by default) by a wide margin
 * (fakeLogits.ts); it honours the plan's extras: logit bias, penalties, temperature, top-k,
 * top-p and min-p when it samples, and log-probability rows of sampled and prompt tokens in
 * the contract's layout, by the rules fakeLogits.ts spells out.
 */
import type { RankStats, StepExtras, StepPlan, StepResult } from '@afd/shared';
import { checkStepPlan, emptyRankStats } from '@afd/shared';
import type { EngineLike, EngineModelInfo } from '../engineLike.js';
import { fakeModelLogits, logprobRow, packLogprobRows, processLogits, sampleRow, type LogprobRow, type RowProcessing, type SparseLogits } from './fakeLogits.js';

export interface FakeEngineOptions extends Partial<EngineModelInfo> {
  /** The token the fake model prefers after a sequence's last token; default cycles through `tokens`. */
  nextToken?: (ctx: { lastTokenId: number; position: number; seed: number }) => number;
  /** Token ids the default nextToken cycles through; also the model's runner-up candidates. */
  tokens?: number[];
  /** Simulated compute time per step in milliseconds. */
  stepDelayMs?: number;
}

/** Qwen3 ids of "Hello", " world", ",", " " and "世界". */
const DEFAULT_TOKENS = [9707, 1879, 11, 220, 99489];

/** The k of each sequence where the step samples it, else -1. */
function masked(ks: Int32Array, sampleMask: Uint8Array): number[] {
  return Array.from(ks, (k, i) => (sampleMask[i] ? k : -1));
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
    const problems = checkStepPlan(plan, this.info);
    if (problems.length > 0) throw new Error(`plan: ${problems.join('; ')}`);
    const out = new Int32Array(plan.numSeqs);
    const sampledRows: LogprobRow[][] = [];
    const promptRows: LogprobRow[][] = [];
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
      promptRows.push(this.promptRows(plan, i));
      sampledRows.push([]);
      if (!plan.sampleMask[i]) continue;
      const processed = processLogits(this.logits(plan.tokenIds[to - 1]!, ctx, seed), this.processingOf(plan, i));
      const sampling = { temperature: plan.temperature[i]!, topK: plan.topK[i]!, topP: plan.topP[i]!, minP: plan.minP[i]!, seed, position: ctx };
      out[i] = sampleRow(processed, sampling);
      const k = plan.extras?.numLogprobs[i] ?? -1;
      if (k >= 0) sampledRows[i]!.push(logprobRow(processed, out[i]!, k));
    }
    const result: StepResult = { tokenIds: out, stepTimeMs: this.opts.stepDelayMs ?? 0 };
    const x = plan.extras;
    if (x && x.numLogprobs.some((k, i) => k >= 0 && plan.sampleMask[i])) result.logprobs = packLogprobRows(sampledRows, masked(x.numLogprobs, plan.sampleMask));
    if (x && x.numPromptLogprobs.some((k) => k >= 0)) result.promptLogprobs = packLogprobRows(promptRows, Array.from(x.numPromptLogprobs));
    return result;
  }

  /** The fake model's raw logits after `lastTokenId` for the token at `position`. */
  private logits(lastTokenId: number, position: number, seed: number): SparseLogits {
    return fakeModelLogits(this.info.vocabSize, this.pick(lastTokenId, position, seed), this.opts.tokens ?? DEFAULT_TOKENS);
  }

  /** Sequence i's bias, penalties and temperature (StepExtras' CSR slices). */
  private processingOf(plan: StepPlan, i: number): RowProcessing {
    const p: RowProcessing = { bias: new Map(), presence: 0, frequency: 0, repetition: 1, seen: new Map(), temperature: plan.temperature[i]! };
    const x: StepExtras | undefined = plan.extras;
    if (!x) return p;
    const bias = new Map<number, number>();
    for (let j = x.biasOffsets[i]!; j < x.biasOffsets[i + 1]!; j++) bias.set(x.biasTokenIds[j]!, (bias.get(x.biasTokenIds[j]!) ?? 0) + x.biasValues[j]!);
    const seen = new Map<number, number>();
    for (let j = x.seenOffsets[i]!; j < x.seenOffsets[i + 1]!; j++) seen.set(x.seenTokenIds[j]!, x.seenCounts[j]!);
    return { ...p, bias, seen, presence: x.presencePenalty[i]!, frequency: x.frequencyPenalty[i]!, repetition: x.repetitionPenalty[i]! };
  }

  /** Prompt rows of sequence i: raw log-softmax of each token of the step whose next token is known. */
  private promptRows(plan: StepPlan, i: number): LogprobRow[] {
    const k = plan.extras?.numPromptLogprobs[i] ?? -1;
    if (k < 0) return [];
    const from = plan.tokenOffsets[i]!;
    const to = plan.tokenOffsets[i + 1]!;
    const lastNext = plan.sampleMask[i] ? -1 : plan.extras!.nextPromptTokenIds[i]!;
    const rows: LogprobRow[] = [];
    for (let t = from; t < to; t++) {
      const next = t + 1 < to ? plan.tokenIds[t + 1]! : lastNext;
      if (next < 0) break;
      rows.push(logprobRow(this.logits(plan.tokenIds[t]!, plan.positions[t]! + 1, plan.seeds[i]!), next, k));
    }
    return rows;
  }

  private pick(lastTokenId: number, position: number, seed: number): number {
    if (this.opts.nextToken) return this.opts.nextToken({ lastTokenId, position, seed });
    const tokens = this.opts.tokens ?? DEFAULT_TOKENS;
    return tokens[(position + seed) % tokens.length]!;
  }

  stats(): RankStats {
    const s = emptyRankStats('colocated', 0, 2, 1);
    return { ...s, steps: this.steps };
  }

  async close(): Promise<void> {}
}
