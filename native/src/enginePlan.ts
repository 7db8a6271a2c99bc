/**
 * StepPlan helpers for the engine: validation before a plan crosses into native code
 * (a bad plan is a clear error, never a crash), and a small builder used by tests,
 * benchmarks and simple callers that do not run the full scheduler.
 */
import type { SamplingParams, StepPlan } from '@afd/shared';

/** The engine facts a plan is checked against. */
export interface PlanLimits {
  vocabSize: number;
  kvBlockSize: number;
  numKvBlocks: number;
}

/** Thrown for an invalid StepPlan; the message names the field and the fix. */
export class StepPlanError extends Error {
  constructor(message: string) {
    super(`invalid StepPlan: ${message}`);
    this.name = 'StepPlanError';
  }
}

function expectArray(plan: StepPlan, key: keyof StepPlan, ctor: { name: string }, length: number): void {
  const v = plan[key] as unknown;
  if (!(v instanceof (ctor as unknown as new () => unknown))) {
    throw new StepPlanError(`${String(key)} must be a ${ctor.name} (got ${v === null ? 'null' : typeof v})`);
  }
  const len = (v as { length: number }).length;
  if (len !== length) throw new StepPlanError(`${String(key)} has ${len} elements, expected ${length}`);
}

function expectInt(value: unknown, name: string, min: number): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min) {
    throw new StepPlanError(`${name} must be an integer >= ${min} (got ${String(value)})`);
  }
  return value;
}

/** Throws StepPlanError unless `plan` is consistent and fits the engine's limits. */
export function validateStepPlan(plan: StepPlan, limits: PlanLimits): void {
  const n = expectInt(plan.numSeqs, 'numSeqs', 1);
  expectArray(plan, 'tokenOffsets', Int32Array, n + 1);
  const numTokens = plan.tokenOffsets[n]!;
  if (plan.tokenOffsets[0] !== 0) throw new StepPlanError('tokenOffsets[0] must be 0');
  expectArray(plan, 'tokenIds', Int32Array, numTokens);
  expectArray(plan, 'positions', Int32Array, numTokens);
  expectArray(plan, 'contextLens', Int32Array, n);
  const maxBlocks = expectInt(plan.maxBlocksPerSeq, 'maxBlocksPerSeq', 1);
  expectArray(plan, 'blockTables', Int32Array, n * maxBlocks);
  expectArray(plan, 'sampleMask', Uint8Array, n);
  expectArray(plan, 'temperature', Float32Array, n);
  expectArray(plan, 'topK', Int32Array, n);
  expectArray(plan, 'topP', Float32Array, n);
  expectArray(plan, 'seeds', Uint32Array, n);
  const split = expectInt(plan.stageSplit, 'stageSplit', 1);
  if (split > n) throw new StepPlanError(`stageSplit ${split} exceeds numSeqs ${n}`);
  if (typeof plan.returnLogits !== 'boolean') throw new StepPlanError('returnLogits must be a boolean');
  const { vocabSize, kvBlockSize, numKvBlocks } = limits;
  for (let s = 0; s < n; s++) {
    const begin = plan.tokenOffsets[s]!;
    const end = plan.tokenOffsets[s + 1]!;
    if (end <= begin) throw new StepPlanError(`sequence ${s} has no tokens (tokenOffsets must strictly increase)`);
    const ctx = plan.contextLens[s]!;
    if (ctx < end - begin) throw new StepPlanError(`sequence ${s}: contextLen ${ctx} is less than its ${end - begin} new tokens`);
    const blocksNeeded = Math.ceil(ctx / kvBlockSize);
    if (blocksNeeded > maxBlocks) {
      throw new StepPlanError(`sequence ${s}: contextLen ${ctx} needs ${blocksNeeded} blocks of ${kvBlockSize} tokens but maxBlocksPerSeq is ${maxBlocks}`);
    }
    for (let t = begin; t < end; t++) {
      const want = ctx - (end - t);
      if (plan.positions[t] !== want) {
        throw new StepPlanError(`token ${t} (sequence ${s}) has position ${plan.positions[t]}, expected ${want}: new tokens fill [contextLen - n, contextLen)`);
      }
      const id = plan.tokenIds[t]!;
      if (id < 0 || id >= vocabSize) throw new StepPlanError(`token id ${id} at index ${t} is outside the vocabulary [0, ${vocabSize})`);
    }
    for (let j = 0; j < blocksNeeded; j++) {
      const b = plan.blockTables[s * maxBlocks + j]!;
      if (b < 0 || b >= numKvBlocks) {
        throw new StepPlanError(`sequence ${s}: block table slot ${j} holds block ${b}, outside [0, ${numKvBlocks}) (the engine has ${numKvBlocks} KV blocks)`);
      }
    }
    if (plan.sampleMask[s]) {
      const temp = plan.temperature[s]!;
      if (!(temp >= 0) || !Number.isFinite(temp)) throw new StepPlanError(`sequence ${s}: temperature ${temp} must be finite and >= 0`);
      if (plan.topK[s]! < 0) throw new StepPlanError(`sequence ${s}: topK ${plan.topK[s]} must be >= 0`);
      const p = plan.topP[s]!;
      if (!(p > 0 && p <= 1)) throw new StepPlanError(`sequence ${s}: topP ${p} must be in (0, 1]`);
    }
  }
}

/** One sequence of a plan built with buildStepPlan. */
export interface PlanSeq {
  /** New tokens of this step. */
  tokenIds: readonly number[];
  /** Tokens already in the KV cache before this step. */
  numCached: number;
  /** KV block ids of the sequence, in order (must cover numCached + tokenIds.length). */
  blockTable: readonly number[];
  /** Sample a token after this step (default true). */
  sample?: boolean;
  /** Sampling settings (default greedy). */
  sampling?: Partial<SamplingParams>;
}

/** Builds a StepPlan from per-sequence descriptions. */
export function buildStepPlan(seqs: readonly PlanSeq[], opts: { stageSplit?: number; returnLogits?: boolean } = {}): StepPlan {
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
    blockTables: new Int32Array(n * maxBlocksPerSeq).fill(-1),
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
    plan.tokenOffsets[i] = t;
    s.tokenIds.forEach((id, j) => {
      plan.tokenIds[t + j] = id;
      plan.positions[t + j] = s.numCached + j;
    });
    t += s.tokenIds.length;
    plan.contextLens[i] = s.numCached + s.tokenIds.length;
    plan.blockTables.set(s.blockTable, i * maxBlocksPerSeq);
    plan.sampleMask[i] = s.sample === false ? 0 : 1;
    plan.temperature[i] = s.sampling?.temperature ?? 0;
    plan.topK[i] = s.sampling?.topK ?? 0;
    plan.topP[i] = s.sampling?.topP ?? 1;
    plan.seeds[i] = s.sampling?.seed ?? 0;
  });
  plan.tokenOffsets[n] = t;
  return plan;
}
