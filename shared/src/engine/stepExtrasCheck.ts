/**
 * The check of a plan's StepExtras (penalties, biases, log-probabilities, token mask). Its
 * shape, O(numSeqs): array classes and lengths, CSR offsets, per-sequence penalties and k
 * within their bounds, mask rows on sampled sequences only, each row once, and the mask's
 * length. Its contents, O(entries), only when asked (checkStepPlan's `contents`): the seen
 * and bias lists' token ids within the vocabulary and distinct per sequence, seen counts
 * >= 0, bias values not NaN, and every mask row allowing a token. Called by checkStepPlan.
 */
import { MAX_TOP_LOGPROBS, type StepExtras, type StepPlan } from './step.js';

type Cls = Int32ArrayConstructor | Float32ArrayConstructor;

function arrayProblem(x: StepExtras, key: keyof StepExtras, cls: Cls, length: number, what: string): string | null {
  const v = x[key] as unknown;
  if (!(v instanceof cls)) return `extras.${key} must be an ${cls.name}`;
  return v.length === length ? null : `extras.${key} has ${v.length} entries, expected ${what} = ${length}`;
}

/**
 * One CSR list: offsets start at 0, never decrease, end at the entry count; with `contents`,
 * ids in the vocabulary, distinct per sequence.
 */
function csrProblems(x: StepExtras, name: 'seen' | 'bias', n: number, vocabSize: number | undefined, contents: boolean, problems: string[]): void {
  const offsets = name === 'seen' ? x.seenOffsets : x.biasOffsets;
  const ids = name === 'seen' ? x.seenTokenIds : x.biasTokenIds;
  const before = problems.length;
  if (offsets[0] !== 0) problems.push(`extras.${name}Offsets[0] is ${offsets[0]}, expected 0`);
  for (let s = 0; s < n; s++) {
    if (offsets[s + 1]! < offsets[s]!) problems.push(`extras.${name}Offsets decreases at sequence ${s} (${offsets[s]} -> ${offsets[s + 1]})`);
  }
  if (offsets[n] !== ids.length) problems.push(`extras.${name}Offsets[numSeqs] is ${offsets[n]}, expected the entry count ${ids.length}`);
  if (!contents) return;
  let bad = -1;
  let maxId = -1;
  for (let i = 0; i < ids.length; i++) {
    const id = ids[i]!;
    if (id < 0 || (vocabSize !== undefined && id >= vocabSize)) {
      bad = i;
      break;
    }
    if (id > maxId) maxId = id;
  }
  if (bad >= 0) problems.push(`extras.${name}TokenIds[${bad}] is ${ids[bad]}, outside the vocabulary [0, ${vocabSize ?? 'vocabSize'})`);
  // One entry per token and sequence: the engine applies a sequence's entries in parallel.
  if (problems.length > before) return;
  const dup = firstRepeat(ids, offsets, n, maxId);
  if (dup !== null) problems.push(`extras.${name}TokenIds of sequence ${dup.seq} list token ${dup.id} twice; expected distinct ids (one entry per token)`);
}

/**
 * The first id listed twice within one sequence's slice, found with one stamp per id (a new
 * stamp per sequence): O(entries) on typed arrays, as this check runs on every step (a Set
 * per sequence cost ~2 ms a step at 64 sequences of a few hundred seen tokens).
 */
let stamps = new Uint32Array(0);
let stamp = 0;
function firstRepeat(ids: Int32Array, offsets: Int32Array, n: number, maxId: number): { seq: number; id: number } | null {
  if (stamps.length <= maxId) {
    stamps = new Uint32Array(maxId + 1);
    stamp = 0;
  }
  for (let s = 0; s < n; s++) {
    if (++stamp === 0xffffffff) {
      stamps.fill(0);
      stamp = 1;
    }
    for (let i = offsets[s]!; i < offsets[s + 1]!; i++) {
      const id = ids[i]!;
      if (stamps[id] === stamp) return { seq: s, id };
      stamps[id] = stamp;
    }
  }
  return null;
}

/** Words of one allowed-token mask row: bit t % 32 of word floor(t / 32) is token t. */
export const maskWordsPerRow = (vocabSize: number): number => Math.ceil(vocabSize / 32);

/** Mask rows a plan uses (sequences with maskRows >= 0). */
export function numMaskRows(plan: StepPlan): number {
  return plan.extras?.maskRows?.reduce((k, r) => (r >= 0 ? k + 1 : k), 0) ?? 0;
}

/** True when the plan's token mask is deferred: rows are used and no tokenMask is given (the engine's provideTokenMask brings it). */
export function defersTokenMask(plan: StepPlan): boolean {
  return plan.extras !== undefined && plan.extras.tokenMask === undefined && numMaskRows(plan) > 0;
}

/** The first row of `mask` (rows of ceil(vocabSize / 32) words) that allows no token of the vocabulary, or -1. */
export function emptyMaskRow(mask: Int32Array, vocabSize: number): number {
  const words = maskWordsPerRow(vocabSize);
  const tail = vocabSize - (words - 1) * 32;
  const lastBits = tail === 32 ? -1 : (1 << tail) - 1;
  for (let r = 0; r * words < mask.length; r++) {
    const row = mask.subarray(r * words, (r + 1) * words);
    if ((row[words - 1]! & lastBits) === 0 && row.subarray(0, words - 1).every((w) => w === 0)) return r;
  }
  return -1;
}

/**
 * maskRows: -1 or a row in [0, M) on a sampled sequence, each row once (M = rows used);
 * tokenMask: M rows when present, each allowing a token (with `contents`).
 */
function maskProblems(x: StepExtras, n: number, sampleMask: Uint8Array, vocabSize: number | undefined, contents: boolean, problems: string[]): void {
  const rows = x.maskRows;
  const m = rows.reduce((k, r) => (r >= 0 ? k + 1 : k), 0);
  const used = new Set<number>();
  for (let s = 0; s < n; s++) {
    const r = rows[s]!;
    if (r === -1) continue;
    if (r < -1 || r >= m) {
      problems.push(`extras.maskRows[${s}] is ${r}; expected -1 (none) or a row in [0, ${m}) (${m} sequences have a row)`);
      continue;
    }
    if (used.has(r)) problems.push(`extras.maskRows[${s}] is ${r}, a row another sequence uses; expected each row once`);
    used.add(r);
    if (sampleMask[s] !== 1) problems.push(`extras.maskRows[${s}] is ${r} but sequence ${s} samples no token (sampleMask 0); only sampled sequences take a mask row`);
  }
  const mask = x.tokenMask as unknown;
  if (mask === undefined) return;
  if (!(mask instanceof Int32Array)) {
    problems.push('extras.tokenMask must be an Int32Array when present (absent = deferred)');
    return;
  }
  if (m === 0) problems.push('extras.tokenMask is given but no sequence has a mask row (maskRows all -1)');
  else if (vocabSize !== undefined && mask.length !== m * maskWordsPerRow(vocabSize)) {
    problems.push(
      `extras.tokenMask has ${mask.length} words, expected ${m} rows x ${maskWordsPerRow(vocabSize)} words (ceil(vocabSize ${vocabSize} / 32)) = ${m * maskWordsPerRow(vocabSize)}`,
    );
  } else if (contents && vocabSize !== undefined && emptyMaskRow(mask, vocabSize) >= 0) {
    problems.push(`extras.tokenMask row ${emptyMaskRow(mask, vocabSize)} allows no token of the vocabulary; a mask row must allow at least one`);
  }
}

/**
 * Every problem of `x` for a plan of n sequences (sampleMask: the plan's); appended to
 * `problems`. contents false: its shape only (see above), O(numSeqs).
 */
export function extrasProblems(x: StepExtras, n: number, sampleMask: Uint8Array, vocabSize: number | undefined, contents: boolean, problems: string[]): void {
  if (typeof x !== 'object' || x === null) {
    problems.push('extras must be an object when present');
    return;
  }
  const before = problems.length;
  const checks: [keyof StepExtras, Cls, number, string][] = [
    ['presencePenalty', Float32Array, n, 'numSeqs'],
    ['frequencyPenalty', Float32Array, n, 'numSeqs'],
    ['repetitionPenalty', Float32Array, n, 'numSeqs'],
    ['seenOffsets', Int32Array, n + 1, 'numSeqs + 1'],
    ['seenTokenIds', Int32Array, x.seenCounts?.length ?? 0, 'seenCounts.length'],
    ['seenCounts', Int32Array, x.seenTokenIds?.length ?? 0, 'seenTokenIds.length'],
    ['biasOffsets', Int32Array, n + 1, 'numSeqs + 1'],
    ['biasTokenIds', Int32Array, x.biasValues?.length ?? 0, 'biasValues.length'],
    ['biasValues', Float32Array, x.biasTokenIds?.length ?? 0, 'biasTokenIds.length'],
    ['numLogprobs', Int32Array, n, 'numSeqs'],
    ['numPromptLogprobs', Int32Array, n, 'numSeqs'],
    ['nextPromptTokenIds', Int32Array, n, 'numSeqs'],
    ['maskRows', Int32Array, n, 'numSeqs'],
  ];
  for (const [key, cls, length, what] of checks) {
    const p = arrayProblem(x, key, cls, length, what);
    if (p) problems.push(p);
  }
  if (problems.length > before) return;
  csrProblems(x, 'seen', n, vocabSize, contents, problems);
  csrProblems(x, 'bias', n, vocabSize, contents, problems);
  for (let s = 0; s < n; s++) {
    if (!Number.isFinite(x.presencePenalty[s]!) || !Number.isFinite(x.frequencyPenalty[s]!)) problems.push(`extras: sequence ${s} has a non-finite presence or frequency penalty`);
    if (!(x.repetitionPenalty[s]! > 0 && Number.isFinite(x.repetitionPenalty[s]!))) problems.push(`extras.repetitionPenalty[${s}] is ${x.repetitionPenalty[s]}; expected a finite number > 0 (1 = off)`);
    for (const key of ['numLogprobs', 'numPromptLogprobs'] as const) {
      const k = x[key][s]!;
      if (k < -1 || k > MAX_TOP_LOGPROBS) problems.push(`extras.${key}[${s}] is ${k}; expected -1 (none) or 0..${MAX_TOP_LOGPROBS}`);
    }
    const next = x.nextPromptTokenIds[s]!;
    if (next < -1 || (vocabSize !== undefined && next >= vocabSize)) problems.push(`extras.nextPromptTokenIds[${s}] is ${next}; expected -1 or a token id`);
  }
  if (contents) valueProblems(x, problems);
  maskProblems(x, n, sampleMask, vocabSize, contents, problems);
  slotProblems(x, n, problems);
}

/** Most penalty slots of one engine (kMaxPenaltySlots in native/src/core/logit-ops.h). */
export const MAX_PENALTY_SLOTS = 1 << 16;

/**
 * Penalty slots (O(numSeqs)): both arrays or neither; -1 or a slot below MAX_PENALTY_SLOTS,
 * never two sequences on one slot; a seed only with a slot; a sequence reading its slot
 * unseeded sends no seen list.
 */
function slotProblems(x: StepExtras, n: number, problems: string[]): void {
  const slots = x.penaltySlots as unknown;
  const seeds = x.penaltySlotSeeds as unknown;
  if (slots === undefined && seeds === undefined) return;
  if (!(slots instanceof Int32Array) || !(seeds instanceof Uint8Array)) {
    problems.push('extras.penaltySlots (an Int32Array) and extras.penaltySlotSeeds (a Uint8Array) come together, or neither');
    return;
  }
  if (slots.length !== n || seeds.length !== n) {
    problems.push(`extras.penaltySlots and penaltySlotSeeds have ${slots.length} and ${seeds.length} entries, expected numSeqs = ${n}`);
    return;
  }
  const owner = new Map<number, number>();
  for (let s = 0; s < n; s++) {
    const k = slots[s]!;
    const seed = seeds[s]!;
    if (k < -1 || k >= MAX_PENALTY_SLOTS) problems.push(`extras.penaltySlots[${s}] is ${k}; expected -1 (none) or a slot in [0, ${MAX_PENALTY_SLOTS})`);
    if (seed > 1) problems.push(`extras.penaltySlotSeeds[${s}] is ${seed}; expected 0 or 1`);
    if (k < 0 && seed !== 0) problems.push(`extras.penaltySlotSeeds[${s}] is 1 but sequence ${s} has no penalty slot (-1)`);
    const listed = x.seenOffsets[s + 1]! - x.seenOffsets[s]!;
    if (k >= 0 && seed === 0 && listed > 0) problems.push(`sequence ${s} reads penalty slot ${k} (penaltySlotSeeds 0) and also sends ${listed} seen tokens; send them only with a seed (1)`);
    if (k < 0) continue;
    const other = owner.get(k);
    if (other !== undefined) problems.push(`extras.penaltySlots gives slot ${k} to sequences ${other} and ${s}; expected one slot per sequence`);
    owner.set(k, s);
  }
}

/** The lists' values: seen counts >= 0, bias values not NaN. */
function valueProblems(x: StepExtras, problems: string[]): void {
  let negative = -1;
  for (let i = 0; i < x.seenCounts.length && negative < 0; i++) if (x.seenCounts[i]! < 0) negative = i;
  if (negative >= 0) problems.push(`extras.seenCounts[${negative}] is ${x.seenCounts[negative]}; expected >= 0 (0 = prompt only)`);
  let nan = -1;
  for (let i = 0; i < x.biasValues.length && nan < 0; i++) if (Number.isNaN(x.biasValues[i]!)) nan = i;
  if (nan >= 0) problems.push(`extras.biasValues[${nan}] is NaN; expected a number (-Infinity bans the token)`);
}
