/**
 * The one StepPlan builder: per-sequence descriptions (new tokens, cached count, block
 * table, sampling) in, the flat typed arrays of step.ts out. The scheduler builds every
 * serving step with it; tests and benchmarks that drive an engine without a scheduler use
 * it too. Check the result with checkStepPlan (stepPlanCheck.ts).
 */
import type { SamplingParams, StepPlan } from './step.js';

/** One sequence's share of a step. */
export interface PlanSeq {
  /** New tokens of this step, at positions numCached, numCached + 1, ... */
  tokenIds: readonly number[];
  /** Tokens already in the KV cache before this step. */
  numCached: number;
  /** KV block ids of the sequence, in order (must cover numCached + tokenIds.length). */
  blockTable: readonly number[];
  /** Sample a token after this step (default true). */
  sample?: boolean;
  /** Sampling settings (default greedy: temperature 0, topK 0, topP 1, seed 0). */
  sampling?: Partial<SamplingParams>;
}

/** Step-wide settings of a plan. */
export interface PlanOptions {
  /** First sequence of stage 1 (dual-batch overlap); default numSeqs = one stage. */
  stageSplit?: number;
  /** Return the last-position logits of each sampled sequence (default false). */
  returnLogits?: boolean;
}

/**
 * Builds a StepPlan, sequences in the given order. Block-table rows are as wide as the
 * longest table; unused slots hold 0 (never read: the engine reads ceil(contextLen /
 * blockSize) slots of a row).
 */
export function buildStepPlan(seqs: readonly PlanSeq[], opts: PlanOptions = {}): StepPlan {
  const n = seqs.length;
  const numTokens = seqs.reduce((sum, s) => sum + s.tokenIds.length, 0);
  const maxBlocksPerSeq = Math.max(1, ...seqs.map((s) => s.blockTable.length));
  const plan: StepPlan = {
    numSeqs: n,
    tokenIds: new Int32Array(numTokens),
    positions: new Int32Array(numTokens),
    tokenOffsets: new Int32Array(n + 1),
    contextLens: new Int32Array(n),
    maxBlocksPerSeq,
    blockTables: new Int32Array(n * maxBlocksPerSeq),
    sampleMask: new Uint8Array(n),
    temperature: new Float32Array(n),
    topK: new Int32Array(n),
    topP: new Float32Array(n),
    seeds: new Uint32Array(n),
    stageSplit: opts.stageSplit ?? n,
    returnLogits: opts.returnLogits ?? false,
  };
  let t = 0;
  seqs.forEach((s, i) => {
    plan.tokenIds.set(s.tokenIds, t);
    for (let j = 0; j < s.tokenIds.length; j++) plan.positions[t + j] = s.numCached + j;
    t += s.tokenIds.length;
    plan.tokenOffsets[i + 1] = t;
    plan.contextLens[i] = s.numCached + s.tokenIds.length;
    plan.blockTables.set(s.blockTable, i * maxBlocksPerSeq);
    plan.sampleMask[i] = s.sample === false ? 0 : 1;
    plan.temperature[i] = s.sampling?.temperature ?? 0;
    plan.topK[i] = s.sampling?.topK ?? 0;
    plan.topP[i] = s.sampling?.topP ?? 1;
    plan.seeds[i] = s.sampling?.seed ?? 0; // a Uint32Array keeps seed mod 2^32, as seed >>> 0
  });
  return plan;
}
