/**
 * Turns the scheduler's choice (which sequences, how many new tokens each) into the flat
 * typed arrays of a StepPlan.
 */
import type { StepPlan } from '@afd/shared';
import type { Sequence } from './Sequence.js';

/** One sequence's share of a step. */
export interface PlanEntry {
  seq: Sequence;
  /** Tokens computed this step, from position seq.numComputedTokens on. */
  numNewTokens: number;
  /** True when the step ends at the sequence's last known token, so the next one is sampled. */
  sample: boolean;
}

export function buildStepPlan(entries: readonly PlanEntry[], blockTableOf: (seq: Sequence) => readonly number[], stageSplit: number): StepPlan {
  const numSeqs = entries.length;
  const numTokens = entries.reduce((n, e) => n + e.numNewTokens, 0);
  const maxBlocksPerSeq = Math.max(1, ...entries.map((e) => blockTableOf(e.seq).length));
  const plan: StepPlan = {
    numSeqs,
    tokenIds: new Int32Array(numTokens),
    positions: new Int32Array(numTokens),
    tokenOffsets: new Int32Array(numSeqs + 1),
    contextLens: new Int32Array(numSeqs),
    maxBlocksPerSeq,
    blockTables: new Int32Array(numSeqs * maxBlocksPerSeq),
    sampleMask: new Uint8Array(numSeqs),
    temperature: new Float32Array(numSeqs),
    topK: new Int32Array(numSeqs),
    topP: new Float32Array(numSeqs),
    seeds: new Uint32Array(numSeqs),
    stageSplit,
    returnLogits: false,
  };
  let t = 0;
  entries.forEach((e, i) => {
    const { seq } = e;
    const start = seq.numComputedTokens;
    for (let k = 0; k < e.numNewTokens; k++, t++) {
      plan.tokenIds[t] = seq.tokenAt(start + k);
      plan.positions[t] = start + k;
    }
    plan.tokenOffsets[i + 1] = t;
    plan.contextLens[i] = start + e.numNewTokens;
    plan.blockTables.set(blockTableOf(seq), i * maxBlocksPerSeq);
    plan.sampleMask[i] = e.sample ? 1 : 0;
    plan.temperature[i] = seq.sampling.temperature;
    plan.topK[i] = seq.sampling.topK;
    plan.topP[i] = seq.sampling.topP;
    plan.seeds[i] = seq.sampling.seed >>> 0;
  });
  return plan;
}
