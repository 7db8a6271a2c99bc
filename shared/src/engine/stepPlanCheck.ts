/**
 * Consistency checks and derived numbers of a StepPlan (see step.ts). The scheduler's
 * tests and the engine boundary use `checkStepPlan` so a malformed plan fails in
 * TypeScript with a readable message instead of deep in native code.
 */
import type { StepPlan } from './step.js';

/** Number of stages of a plan: 2 when stageSplit cuts the batch, else 1. */
export function numStagesOf(plan: StepPlan): number {
  return plan.stageSplit > 0 && plan.stageSplit < plan.numSeqs ? 2 : 1;
}

/**
 * Tokens per stage, the numbers that go into this rank's slot of the control payload.
 * One stage: [numTokens]; two stages: [tokens of seqs < stageSplit, tokens of the rest].
 */
export function stageTokenCounts(plan: StepPlan): number[] {
  const numTokens = plan.tokenOffsets[plan.numSeqs] ?? 0;
  if (numStagesOf(plan) === 1) return [numTokens];
  const split = plan.tokenOffsets[plan.stageSplit] ?? 0;
  return [split, numTokens - split];
}

/** Every inconsistency of a plan, one message each; empty when the plan is well formed. */
export function checkStepPlan(plan: StepPlan): string[] {
  const problems: string[] = [];
  const n = plan.numSeqs;
  if (!Number.isSafeInteger(n) || n < 0) return [`numSeqs is ${n}; expected a non-negative integer`];
  const perSeq: [string, { length: number }][] = [
    ['contextLens', plan.contextLens],
    ['sampleMask', plan.sampleMask],
    ['temperature', plan.temperature],
    ['topK', plan.topK],
    ['topP', plan.topP],
    ['seeds', plan.seeds],
  ];
  for (const [name, arr] of perSeq) if (arr.length !== n) problems.push(`${name} has ${arr.length} entries, expected numSeqs = ${n}`);
  if (plan.tokenOffsets.length !== n + 1) {
    problems.push(`tokenOffsets has ${plan.tokenOffsets.length} entries, expected numSeqs + 1 = ${n + 1}`);
    return problems;
  }
  if (plan.tokenOffsets[0] !== 0) problems.push(`tokenOffsets[0] is ${plan.tokenOffsets[0]}, expected 0`);
  for (let i = 0; i < n; i++) {
    const start = plan.tokenOffsets[i]!;
    const end = plan.tokenOffsets[i + 1]!;
    if (end <= start) problems.push(`sequence ${i} has ${end - start} tokens; every sequence has at least one`);
    else if (plan.contextLens.length === n && plan.contextLens[i]! < end - start) {
      problems.push(`contextLens[${i}] is ${plan.contextLens[i]} but the sequence brings ${end - start} new tokens`);
    }
  }
  const numTokens = plan.tokenOffsets[n]!;
  if (plan.tokenIds.length !== numTokens) problems.push(`tokenIds has ${plan.tokenIds.length} entries, expected ${numTokens} (tokenOffsets[numSeqs])`);
  if (plan.positions.length !== numTokens) problems.push(`positions has ${plan.positions.length} entries, expected ${numTokens}`);
  if (!Number.isSafeInteger(plan.maxBlocksPerSeq) || plan.maxBlocksPerSeq < 0) problems.push(`maxBlocksPerSeq is ${plan.maxBlocksPerSeq}`);
  else if (plan.blockTables.length !== n * plan.maxBlocksPerSeq) {
    problems.push(`blockTables has ${plan.blockTables.length} entries, expected numSeqs x maxBlocksPerSeq = ${n * plan.maxBlocksPerSeq}`);
  }
  if (!Number.isSafeInteger(plan.stageSplit) || plan.stageSplit < 0 || plan.stageSplit > n) {
    problems.push(`stageSplit is ${plan.stageSplit}; expected 0..numSeqs (numSeqs for one stage)`);
  }
  for (let i = 0; i < plan.topP.length; i++) {
    const p = plan.topP[i]!;
    if (!(p > 0 && p <= 1)) problems.push(`topP[${i}] is ${p}; expected (0, 1]`);
  }
  for (let i = 0; i < plan.temperature.length; i++) {
    if (!(plan.temperature[i]! >= 0)) problems.push(`temperature[${i}] is ${plan.temperature[i]}; expected >= 0`);
  }
  return problems;
}
