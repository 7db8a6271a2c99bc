/**
 * The one check of a StepPlan (see step.ts). Every caller that hands a plan to the engine
 * checks it here (the native Engine wrapper before each step, the scheduler's tests,
 * benchmarks through the wrapper), so a malformed plan fails in TypeScript with a message
 * naming the field instead of deep in native code. The C++ engine keeps a guard of the same
 * rules (native/src/runtime/engine/step-plan.cc, step-extras.cc) for callers of the raw
 * addon, and it is the one that checks the extras' list contents of every served step: the
 * Engine wrapper asks for `{ contents: false }`, as those lists are O(entries) (64 sequences
 * x ~700 seen tokens cost ~0.5 ms a step here; the C++ check, on the engine's worker thread,
 * a fraction of that).
 */
import type { StepPlan } from './step.js';
import { extrasProblems } from './stepExtrasCheck.js';

/** The engine facts a plan is checked against (NativeEngineInfo carries them). */
export interface StepPlanLimits {
  /** Token ids lie in [0, vocabSize). */
  vocabSize: number;
  /** Tokens per KV block: a sequence of contextLen c needs ceil(c / kvBlockSize) blocks. */
  kvBlockSize: number;
  /** Block ids lie in [0, numKvBlocks). */
  numKvBlocks: number;
  /**
   * Recurrent-state slots of a model with linear-attention (gdn) layers, 0 for any other
   * model: stateSlots is then required, each in [0, numStateSlots), or must be absent.
   * Undefined: only the plan's own rules of stateSlots are checked.
   */
  numStateSlots?: number;
}

/** What checkStepPlan checks. */
export interface StepPlanCheckOptions {
  /**
   * The per-entry contents of the extras' lists (default true): seen and bias token ids in
   * the vocabulary and distinct per sequence, seen counts >= 0, bias values not NaN, and a
   * given token mask's rows each allowing a token. false: every other rule still runs (array
   * classes and lengths, CSR offsets, tokens, positions, blocks, per-sequence settings), the
   * extras in O(numSeqs); the engine's C++ check refuses bad contents, naming the field.
   */
  contents?: boolean;
}

/** Largest count the engine reads (the C++ side holds them as int32). */
const MAX_INT32 = 2 ** 31 - 1;
/** Problems quoted in a StepPlanError message; the rest are counted. */
const MAX_QUOTED = 8;

/** Thrown by validateStepPlan; the message names each broken field and what it should be. */
export class StepPlanError extends Error {
  constructor(
    /** Every problem checkStepPlan found. */
    readonly problems: string[],
  ) {
    const more = problems.length > MAX_QUOTED ? `; and ${problems.length - MAX_QUOTED} more` : '';
    super(`invalid StepPlan: ${problems.slice(0, MAX_QUOTED).join('; ')}${more}`);
    this.name = 'StepPlanError';
  }
}

type TypedArrayClass = Int32ArrayConstructor | Uint8ArrayConstructor | Float32ArrayConstructor | Uint32ArrayConstructor;

function isIntIn(v: unknown, min: number, max: number): v is number {
  return typeof v === 'number' && Number.isInteger(v) && v >= min && v <= max;
}

function describe(v: unknown): string {
  if (v === null) return 'null';
  if (typeof v === 'object') return (v as object).constructor?.name ?? 'object';
  return typeof v;
}

/** Problems of one array field: its class and its length. */
function arrayProblem(plan: StepPlan, key: keyof StepPlan, cls: TypedArrayClass, length: number, what: string): string | null {
  const v = plan[key] as unknown;
  if (!(v instanceof cls)) return `${key} must be an ${cls.name} (got ${describe(v)})`;
  return v.length === length ? null : `${key} has ${v.length} entries, expected ${what} = ${length}`;
}

/** The scalar fields: counts, split, flags. Returns numSeqs when it is usable, else null. */
function scalarProblems(plan: StepPlan, problems: string[]): number | null {
  const n = plan.numSeqs;
  if (!isIntIn(n, 1, MAX_INT32)) {
    problems.push(`numSeqs is ${String(n)}; expected an integer in [1, ${MAX_INT32}] (a step runs at least one sequence)`);
    return null;
  }
  if (!isIntIn(plan.maxBlocksPerSeq, 1, MAX_INT32)) problems.push(`maxBlocksPerSeq is ${String(plan.maxBlocksPerSeq)}; expected an integer >= 1`);
  if (!isIntIn(plan.stageSplit, 1, n)) {
    problems.push(`stageSplit is ${String(plan.stageSplit)}; expected an integer in [1, numSeqs = ${n}] (numSeqs for one stage)`);
  }
  if (typeof plan.returnLogits !== 'boolean') problems.push(`returnLogits must be a boolean (got ${describe(plan.returnLogits)})`);
  return n;
}

/** Class and length of every array; returns the token count when all fit. */
function shapeProblems(plan: StepPlan, n: number, problems: string[]): number | null {
  const offsets = arrayProblem(plan, 'tokenOffsets', Int32Array, n + 1, 'numSeqs + 1');
  if (offsets) {
    problems.push(offsets);
    return null;
  }
  const numTokens = plan.tokenOffsets[n]!;
  if (numTokens < n) {
    problems.push(`tokenOffsets[numSeqs] is ${numTokens}; expected the token count, at least numSeqs = ${n} (every sequence has a token)`);
    return null;
  }
  const checks: [keyof StepPlan, TypedArrayClass, number, string][] = [
    ['tokenIds', Int32Array, numTokens, 'tokenOffsets[numSeqs]'],
    ['positions', Int32Array, numTokens, 'tokenOffsets[numSeqs]'],
    ['contextLens', Int32Array, n, 'numSeqs'],
    ['sampleMask', Uint8Array, n, 'numSeqs'],
    ['temperature', Float32Array, n, 'numSeqs'],
    ['topK', Int32Array, n, 'numSeqs'],
    ['topP', Float32Array, n, 'numSeqs'],
    ['seeds', Uint32Array, n, 'numSeqs'],
    ['minP', Float32Array, n, 'numSeqs'],
  ];
  if (isIntIn(plan.maxBlocksPerSeq, 1, MAX_INT32)) checks.push(['blockTables', Int32Array, n * plan.maxBlocksPerSeq, 'numSeqs x maxBlocksPerSeq']);
  const before = problems.length;
  for (const [key, cls, length, what] of checks) {
    const p = arrayProblem(plan, key, cls, length, what);
    if (p) problems.push(p);
  }
  return problems.length === before ? numTokens : null;
}

/** Sampling settings of sequence s (checked whether or not it samples: the plan carries them). */
function samplingProblems(plan: StepPlan, s: number, problems: string[]): void {
  const mask = plan.sampleMask[s]!;
  if (mask > 1) problems.push(`sampleMask[${s}] is ${mask}; expected 0 or 1`);
  const temp = plan.temperature[s]!;
  if (!(Number.isFinite(temp) && temp >= 0)) problems.push(`temperature[${s}] is ${temp}; expected a finite number >= 0 (0 = greedy)`);
  if (plan.topK[s]! < 0) problems.push(`topK[${s}] is ${plan.topK[s]}; expected >= 0 (0 = off)`);
  const p = plan.topP[s]!;
  if (!(p > 0 && p <= 1)) problems.push(`topP[${s}] is ${p}; expected (0, 1] (1 = off)`);
  const minP = plan.minP[s]!;
  if (!(minP >= 0 && minP <= 1)) problems.push(`minP[${s}] is ${minP}; expected [0, 1] (0 = off)`);
}

/** Tokens, positions and (with limits) vocabulary and KV blocks of sequence s. */
function sequenceProblems(plan: StepPlan, s: number, limits: StepPlanLimits | undefined, problems: string[]): void {
  const begin = plan.tokenOffsets[s]!;
  const end = plan.tokenOffsets[s + 1]!;
  if (begin < 0 || end <= begin || end > plan.tokenIds.length) {
    problems.push(`sequence ${s} has tokens [${begin}, ${end}) of ${plan.tokenIds.length}; tokenOffsets must strictly increase (every sequence has at least one token)`);
    return;
  }
  const ctx = plan.contextLens[s]!;
  if (ctx < end - begin) {
    problems.push(`contextLens[${s}] is ${ctx} but sequence ${s} brings ${end - begin} new tokens`);
    return;
  }
  for (let t = begin; t < end; t++) {
    const want = ctx - (end - t);
    if (plan.positions[t] !== want) {
      problems.push(`token ${t} (sequence ${s}) has position ${plan.positions[t]}, expected ${want}: new tokens fill [contextLen - n, contextLen)`);
    }
    const id = plan.tokenIds[t]!;
    if (id < 0 || (limits && id >= limits.vocabSize)) {
      problems.push(`token id ${id} at index ${t} is outside the vocabulary [0, ${limits ? limits.vocabSize : 'vocabSize'})`);
    }
  }
  if (!limits) return;
  const maxBlocks = plan.maxBlocksPerSeq;
  const needed = Math.ceil(ctx / limits.kvBlockSize);
  if (needed > maxBlocks) {
    problems.push(`sequence ${s}: contextLen ${ctx} needs ${needed} blocks of ${limits.kvBlockSize} tokens but maxBlocksPerSeq is ${maxBlocks}`);
    return;
  }
  for (let j = 0; j < needed; j++) {
    const b = plan.blockTables[s * maxBlocks + j]!;
    if (b < 0 || b >= limits.numKvBlocks) {
      problems.push(`sequence ${s}: block table slot ${j} holds block ${b}, outside [0, ${limits.numKvBlocks}) (the engine has ${limits.numKvBlocks} KV blocks)`);
    }
  }
}

/**
 * stateSlots: an Int32Array of numSeqs slots, each >= 0 and distinct within the step; with
 * the engine's numStateSlots, present exactly when it is > 0, each below it.
 */
function stateSlotProblems(plan: StepPlan, n: number, numStateSlots: number | undefined, problems: string[]): void {
  const slots = plan.stateSlots;
  if (slots === undefined) {
    if (numStateSlots !== undefined && numStateSlots > 0) {
      problems.push(`stateSlots is missing; the model has linear-attention (gdn) layers and every sequence needs a recurrent-state slot in [0, numStateSlots = ${numStateSlots})`);
    }
    return;
  }
  if (numStateSlots === 0) {
    problems.push('stateSlots is given but the model keeps no recurrent state (numStateSlots 0: no linear-attention layer); leave it out');
    return;
  }
  const shape = arrayProblem(plan, 'stateSlots', Int32Array, n, 'numSeqs');
  if (shape) {
    problems.push(shape);
    return;
  }
  const owner = new Map<number, number>();
  for (let s = 0; s < n; s++) {
    const slot = slots[s]!;
    if (slot < 0 || (numStateSlots !== undefined && slot >= numStateSlots)) {
      problems.push(`stateSlots[${s}] is ${slot}; expected a slot in [0, ${numStateSlots ?? 'numStateSlots'})`);
      continue;
    }
    const other = owner.get(slot);
    if (other !== undefined) problems.push(`stateSlots[${s}] is ${slot}, the slot of sequence ${other} too; each sequence of a step has its own slot`);
    else owner.set(slot, s);
  }
}

/**
 * Every inconsistency of a plan, one message each; empty when the plan is well formed.
 * With `limits`, also token ids against the vocabulary and block tables against the KV cache.
 */
export function checkStepPlan(plan: StepPlan, limits?: StepPlanLimits, options: StepPlanCheckOptions = {}): string[] {
  if (typeof plan !== 'object' || plan === null) return [`a StepPlan must be an object (got ${describe(plan)})`];
  const problems: string[] = [];
  const n = scalarProblems(plan, problems);
  if (n === null) return problems;
  const numTokens = shapeProblems(plan, n, problems);
  if (numTokens === null) return problems; // element checks would read past the arrays
  if (plan.tokenOffsets[0] !== 0) problems.push(`tokenOffsets[0] is ${plan.tokenOffsets[0]}, expected 0`);
  for (let s = 0; s < n; s++) {
    sequenceProblems(plan, s, limits, problems);
    samplingProblems(plan, s, problems);
  }
  stateSlotProblems(plan, n, limits?.numStateSlots, problems);
  if (plan.extras !== undefined) extrasProblems(plan.extras, n, plan.sampleMask, limits?.vocabSize, options.contents ?? true, problems);
  return problems;
}

/** Throws StepPlanError naming every problem unless `plan` is well formed (and fits `limits`). */
export function validateStepPlan(plan: StepPlan, limits?: StepPlanLimits, options: StepPlanCheckOptions = {}): void {
  const problems = checkStepPlan(plan, limits, options);
  if (problems.length > 0) throw new StepPlanError(problems);
}
