/**
 * The check of a plan's StepExtras (penalties, biases, log-probabilities): array classes
 * and lengths, CSR offsets, token ids within their bounds and distinct per sequence's list,
 * counts >= 0 and k within its bounds. Called by checkStepPlan.
 */
import { MAX_TOP_LOGPROBS, type StepExtras } from './step.js';

type Cls = Int32ArrayConstructor | Float32ArrayConstructor;

function arrayProblem(x: StepExtras, key: keyof StepExtras, cls: Cls, length: number, what: string): string | null {
  const v = x[key] as unknown;
  if (!(v instanceof cls)) return `extras.${key} must be an ${cls.name}`;
  return v.length === length ? null : `extras.${key} has ${v.length} entries, expected ${what} = ${length}`;
}

/** One CSR list: offsets start at 0, never decrease, end at the entry count; ids in the vocabulary, distinct per sequence. */
function csrProblems(x: StepExtras, name: 'seen' | 'bias', n: number, vocabSize: number | undefined, problems: string[]): void {
  const offsets = name === 'seen' ? x.seenOffsets : x.biasOffsets;
  const ids = name === 'seen' ? x.seenTokenIds : x.biasTokenIds;
  const before = problems.length;
  if (offsets[0] !== 0) problems.push(`extras.${name}Offsets[0] is ${offsets[0]}, expected 0`);
  for (let s = 0; s < n; s++) {
    if (offsets[s + 1]! < offsets[s]!) problems.push(`extras.${name}Offsets decreases at sequence ${s} (${offsets[s]} -> ${offsets[s + 1]})`);
  }
  if (offsets[n] !== ids.length) problems.push(`extras.${name}Offsets[numSeqs] is ${offsets[n]}, expected the entry count ${ids.length}`);
  const bad = ids.findIndex((id) => id < 0 || (vocabSize !== undefined && id >= vocabSize));
  if (bad >= 0) problems.push(`extras.${name}TokenIds[${bad}] is ${ids[bad]}, outside the vocabulary [0, ${vocabSize ?? 'vocabSize'})`);
  // One entry per token and sequence: the engine applies a sequence's entries in parallel.
  if (problems.length > before) return;
  for (let s = 0; s < n; s++) {
    const seen = new Set<number>();
    const dup = ids.subarray(offsets[s], offsets[s + 1]).find((id) => seen.has(id) || !seen.add(id));
    if (dup !== undefined) problems.push(`extras.${name}TokenIds of sequence ${s} list token ${dup} twice; expected distinct ids (one entry per token)`);
  }
}

/** Every problem of `x` for a plan of n sequences; appended to `problems`. */
export function extrasProblems(x: StepExtras, n: number, vocabSize: number | undefined, problems: string[]): void {
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
  ];
  for (const [key, cls, length, what] of checks) {
    const p = arrayProblem(x, key, cls, length, what);
    if (p) problems.push(p);
  }
  if (problems.length > before) return;
  csrProblems(x, 'seen', n, vocabSize, problems);
  csrProblems(x, 'bias', n, vocabSize, problems);
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
  const negative = x.seenCounts.findIndex((c) => c < 0);
  if (negative >= 0) problems.push(`extras.seenCounts[${negative}] is ${x.seenCounts[negative]}; expected >= 0 (0 = prompt only)`);
  const nan = x.biasValues.findIndex((v) => Number.isNaN(v));
  if (nan >= 0) problems.push(`extras.biasValues[${nan}] is NaN; expected a number (-Infinity bans the token)`);
}
