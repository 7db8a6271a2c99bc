/**
 * `afd-bench decode --prefix-hit Q`: what a prefix-cache hit costs the engine. Each of
 * `batch` sequences already holds `context` tokens of KV; the hit step prefills Q new tokens
 * per sequence on top of them and samples one token each (a burst of chat turns whose
 * history is cached). The cold run prefills the same context + Q tokens from nothing, in
 * steps of at most prefillTokens tokens, as the scheduler's chunked prefill would; its
 * figure is the sum of those steps. The ratio hit / cold is the engine's share of the
 * served TTFT ratio (docs/benchmarks.md, "Prefix caching").
 */
import type { Engine } from '@afd/native';
import { buildStepPlan, type PlanSeq } from '@afd/shared';
import { median, promptTokens } from './profile/rig.js';

export interface PrefixHitRow {
  batch: number;
  /** New tokens per sequence on top of the cached context. */
  suffix: number;
  context: number;
  /** Median wall time of the hit step (ms). */
  hitMs: number;
  /** Median of the cold prefill's summed steps (ms), and how many steps it took. */
  coldMs: number;
  coldSteps: number;
  ratio: number;
  /** The hit step sampled (greedy) what the cold prefill's last chunks did, for every sequence. */
  sameTokens: boolean;
}

export interface HitRig {
  engine: Engine;
  vocab: number;
  blockSize: number;
  /** Block ids of sequence s, enough for context + suffix tokens. */
  blocks: readonly (readonly number[])[];
  context: number;
  suffix: number;
  prefillTokens: number;
  repeats: number;
  /** Holds the last timed hit step in the device profiler's capture range (--profile-range hit). */
  profileHit?: boolean;
}

/** Tokens [from, to) of sequence s's prompt of context + suffix tokens, as one plan entry. */
function chunk(rig: HitRig, s: number, from: number, to: number, sample: boolean): PlanSeq {
  const ids = promptTokens(s, rig.context + rig.suffix, rig.vocab).slice(from, to);
  return { tokenIds: ids, numCached: from, blockTable: rig.blocks[s]!.slice(0, Math.ceil(to / rig.blockSize)), sample };
}

/** One step; its wall time and the token drawn for each sampled sequence, in plan order. */
async function timed(engine: Engine, seqs: PlanSeq[]): Promise<{ ms: number; tokens: number[] }> {
  const t = performance.now();
  const r = await engine.step(buildStepPlan(seqs));
  return { ms: performance.now() - t, tokens: Array.from(r.tokenIds) };
}

/** The cold prefill of `batch` whole prompts in chunks of at most prefillTokens tokens (ms). */
async function coldPrefill(rig: HitRig, batch: number): Promise<{ ms: number; steps: number; tokens: number[] }> {
  const total = rig.context + rig.suffix;
  const done = new Array<number>(batch).fill(0);
  const tokens = new Array<number>(batch).fill(-1);
  let ms = 0;
  let steps = 0;
  while (done.some((d) => d < total)) {
    let budget = rig.prefillTokens;
    const seqs: PlanSeq[] = [];
    const finishing: number[] = [];
    for (let s = 0; s < batch && budget > 0; s++) {
      if (done[s]! >= total) continue;
      const to = Math.min(total, done[s]! + budget);
      if (to === total) finishing.push(s);
      seqs.push(chunk(rig, s, done[s]!, to, to === total));
      budget -= to - done[s]!;
      done[s] = to;
    }
    const r = await timed(rig.engine, seqs);
    finishing.forEach((s, i) => (tokens[s] = r.tokens[i]!));
    ms += r.ms;
    steps++;
  }
  return { ms, steps, tokens };
}

/** Why --prefix-hit cannot time `model`, a model with linear-attention (gdn) layers. */
export function prefixHitRefusal(model: string): string {
  return `--prefix-hit: ${model} has linear-attention (gdn) layers, whose per-sequence recurrent state KV blocks do not hold: a prefix-cache hit cannot resume a sequence there (served ranks turn prefix caching off for it); leave --prefix-hit out`;
}

/** Times the hit step and the cold prefill of `batch` sequences (one warm-up run each). */
export async function timePrefixHit(rig: HitRig, batch: number): Promise<PrefixHitRow> {
  if (rig.engine.info.numStateSlots > 0) throw new Error(prefixHitRefusal(rig.engine.info.arch));
  // The context's KV: the cold run writes it, so the hit steps read what a cache would hold.
  const cold: number[] = [];
  let coldSteps = 0;
  let coldTokens: number[] = [];
  for (let i = 0; i <= rig.repeats; i++) {
    const r = await coldPrefill(rig, batch);
    if (i > 0) cold.push(r.ms);
    coldSteps = r.steps;
    coldTokens = r.tokens;
  }
  const hit: number[] = [];
  const hitSeqs = Array.from({ length: batch }, (_, s) => chunk(rig, s, rig.context, rig.context + rig.suffix, true));
  let hitTokens: number[] = [];
  for (let i = 0; i <= rig.repeats; i++) {
    const profiled = rig.profileHit === true && i === rig.repeats;
    if (profiled) rig.engine.profilerRange(true);
    const r = await timed(rig.engine, hitSeqs);
    if (profiled) rig.engine.profilerRange(false);
    if (i > 0) hit.push(r.ms);
    hitTokens = r.tokens;
  }
  const hitMs = median(hit);
  const coldMs = median(cold);
  const sameTokens = hitTokens.length === batch && hitTokens.every((t, s) => t === coldTokens[s]);
  return { batch, suffix: rig.suffix, context: rig.context, hitMs, coldMs, coldSteps, ratio: hitMs / coldMs, sameTokens };
}

export function formatPrefixHit(r: PrefixHitRow): string {
  return `afd-bench decode: prefix hit, batch ${r.batch} x ${r.suffix} new over ${r.context} cached: ${r.hitMs.toFixed(2)} ms; cold prefill of ${r.context + r.suffix} tokens each: ${r.coldMs.toFixed(1)} ms in ${r.coldSteps} steps (hit/cold ${r.ratio.toFixed(3)}; ${r.sameTokens ? 'same' : 'NOT the same'} greedy tokens)`;
}
