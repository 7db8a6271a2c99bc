/**
 * The one StepPlan builder: per-sequence descriptions (new tokens, cached count, block
 * table, sampling) in, the flat typed arrays of step.ts out. The scheduler builds every
 * serving step with it; tests and benchmarks that drive an engine without a scheduler use
 * it too. Check the result with checkStepPlan (stepPlanCheck.ts).
 */
import { SeenTokens } from './seenTokens.js';
import type { SamplingParams, StepExtras, StepPlan } from './step.js';

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
  /** Sampling settings (default greedy: temperature 0, topK 0, topP 1, seed 0, minP 0). */
  sampling?: Partial<SamplingParams>;
  /** Penalties (default off) and the tokens they look at. */
  penalties?: PlanPenalties;
  /** Additive logit biases by token id (OpenAI logit_bias; -Infinity bans a token). */
  logitBias?: ReadonlyMap<number, number>;
  /** Top log-probabilities of the sampled token (0..20); undefined = none. */
  logprobs?: number;
  /** Top log-probabilities of this step's prompt tokens (0..20); undefined = none. */
  promptLogprobs?: number;
  /** The prompt token after this step's last one, when the step does not sample (prompt logprobs). */
  nextPromptTokenId?: number;
  /**
   * The sampled token obeys a row of the step's allowed-token mask (structured outputs; only
   * for a sampled sequence). Rows are numbered in sequence order over the constrained ones.
   */
  constrained?: boolean;
  /**
   * The engine's recurrent-state slot of the sequence (StepPlan.stateSlots), for a model with
   * linear-attention (gdn) layers: every sequence of the step has one, or none does.
   */
  stateSlot?: number;
}

/** vLLM's penalties of one sequence and the token counts they read. */
export interface PlanPenalties {
  presence: number;
  frequency: number;
  repetition: number;
  /**
   * Distinct tokens seen in the prompt or output, with their output counts (0 = prompt only).
   * A SeenTokens (seenTokens.ts) is copied with two memcpys; any other map is iterated.
   * Sent only without a slot, or with a slot's seed.
   */
  seen: ReadonlyMap<number, number>;
  /**
   * The engine's penalty slot that keeps these counts on the device (StepExtras.penaltySlots);
   * seed: this step writes `seen` into it (its first step); otherwise `seen` is not sent.
   */
  slot?: { id: number; seed: boolean };
}

const penaltiesOn = (p: PlanPenalties | undefined): p is PlanPenalties =>
  p !== undefined && (p.presence !== 0 || p.frequency !== 0 || p.repetition !== 1);

/** True when sequence s needs the plan's extras (penalties, biases, log-probabilities or a mask row). */
function needsExtras(s: PlanSeq): boolean {
  return (
    penaltiesOn(s.penalties) ||
    (s.logitBias?.size ?? 0) > 0 ||
    s.logprobs !== undefined ||
    s.promptLogprobs !== undefined ||
    s.constrained === true
  );
}

/**
 * The extras of a plan (see StepExtras), or undefined when no sequence needs them.
 * tokenMask: the mask rows of the constrained sequences (absent: deferred, given to the
 * engine's provideTokenMask while the step runs). A mask without a constrained sequence is an error.
 */
export function buildStepExtras(seqs: readonly PlanSeq[], tokenMask?: Int32Array): StepExtras | undefined {
  if (tokenMask !== undefined && !seqs.some((s) => s.constrained === true)) {
    throw new Error('buildStepExtras: a tokenMask was given but no sequence is constrained (PlanSeq.constrained)');
  }
  if (!seqs.some(needsExtras)) return undefined;
  const n = seqs.length;
  const noList = new Map<number, number>();
  const seen = seqs.map((s) => (penaltiesOn(s.penalties) && (s.penalties.slot?.seed ?? true) ? s.penalties.seen : noList));
  const slotted = seqs.some((s) => penaltiesOn(s.penalties) && s.penalties.slot !== undefined);
  const bias = seqs.map((s) => s.logitBias ?? new Map<number, number>());
  const extras: StepExtras = {
    presencePenalty: new Float32Array(n),
    frequencyPenalty: new Float32Array(n),
    repetitionPenalty: new Float32Array(n).fill(1),
    seenOffsets: new Int32Array(n + 1),
    seenTokenIds: new Int32Array(seen.reduce((k, m) => k + m.size, 0)),
    seenCounts: new Int32Array(seen.reduce((k, m) => k + m.size, 0)),
    biasOffsets: new Int32Array(n + 1),
    biasTokenIds: new Int32Array(bias.reduce((k, m) => k + m.size, 0)),
    biasValues: new Float32Array(bias.reduce((k, m) => k + m.size, 0)),
    numLogprobs: new Int32Array(n).fill(-1),
    numPromptLogprobs: new Int32Array(n).fill(-1),
    nextPromptTokenIds: new Int32Array(n).fill(-1),
    maskRows: new Int32Array(n).fill(-1),
  };
  let k = 0;
  let b = 0;
  let m = 0;
  seqs.forEach((s, i) => {
    if (penaltiesOn(s.penalties)) {
      extras.presencePenalty[i] = s.penalties.presence;
      extras.frequencyPenalty[i] = s.penalties.frequency;
      extras.repetitionPenalty[i] = s.penalties.repetition;
    }
    const list = seen[i]!;
    if (list instanceof SeenTokens) {
      extras.seenTokenIds.set(list.ids(), k);
      extras.seenCounts.set(list.counts(), k);
      k += list.size;
    } else {
      for (const [id, count] of list) {
        extras.seenTokenIds[k] = id;
        extras.seenCounts[k++] = count;
      }
    }
    extras.seenOffsets[i + 1] = k;
    for (const [id, value] of bias[i]!) {
      extras.biasTokenIds[b] = id;
      extras.biasValues[b++] = value;
    }
    extras.biasOffsets[i + 1] = b;
    extras.numLogprobs[i] = s.logprobs ?? -1;
    extras.numPromptLogprobs[i] = s.promptLogprobs ?? -1;
    extras.nextPromptTokenIds[i] = s.nextPromptTokenId ?? -1;
    if (s.constrained === true) extras.maskRows[i] = m++;
  });
  if (tokenMask !== undefined) extras.tokenMask = tokenMask;
  if (slotted) {
    extras.penaltySlots = new Int32Array(n).fill(-1);
    extras.penaltySlotSeeds = new Uint8Array(n);
    seqs.forEach((s, i) => {
      const slot = penaltiesOn(s.penalties) ? s.penalties.slot : undefined;
      if (slot === undefined) return;
      extras.penaltySlots![i] = slot.id;
      extras.penaltySlotSeeds![i] = slot.seed ? 1 : 0;
    });
  }
  return extras;
}

/** Step-wide settings of a plan. */
export interface PlanOptions {
  /** First sequence of stage 1 (dual-batch overlap); default numSeqs = one stage. */
  stageSplit?: number;
  /** Return the last-position logits of each sampled sequence (default false). */
  returnLogits?: boolean;
  /**
   * The allowed-token mask rows of the constrained sequences (StepExtras.tokenMask); absent
   * with a constrained sequence: the mask is deferred (the engine's provideTokenMask).
   */
  tokenMask?: Int32Array;
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
    minP: new Float32Array(n),
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
    plan.minP[i] = s.sampling?.minP ?? 0;
  });
  const extras = buildStepExtras(seqs, opts.tokenMask);
  if (extras) plan.extras = extras;
  const stateSlots = stateSlotsOf(seqs);
  if (stateSlots) plan.stateSlots = stateSlots;
  return plan;
}

/**
 * StepPlan.stateSlots from the sequences' stateSlot: undefined when none has one; throws,
 * naming the first sequence without one, when only some have one (the engine needs a slot
 * for every sequence of a model with gdn layers, and none for another model).
 */
function stateSlotsOf(seqs: readonly PlanSeq[]): Int32Array | undefined {
  const first = seqs.findIndex((s) => s.stateSlot !== undefined);
  if (first < 0) return undefined;
  const missing = seqs.findIndex((s) => s.stateSlot === undefined);
  if (missing >= 0) {
    throw new Error(`buildStepPlan: sequence ${missing} has no stateSlot but sequence ${first} has one; give every sequence of the step a recurrent-state slot (a model with linear-attention layers), or none`);
  }
  return Int32Array.from(seqs, (s) => s.stateSlot!);
}
