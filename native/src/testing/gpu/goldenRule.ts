/**
 * The bf16 rule of the GPU suite's golden cases, as a pure judgement over what one case
 * measured (goldenCheck.ts measures). Against an fp32 reference, bf16 activations (f32
 * accumulation) move every linear output by about cudaLogitTolerance of its rms. Two kinds
 * of reference decision can therefore come out differently, and only those:
 *   - a greedy token whose reference top-1 / top-2 logit margin is inside the noise band of
 *     its logit row (bf16FlipMargin);
 *   - a routing choice whose reference gap, relative to the rms of the router scores it was
 *     made on, is below routerTieBand. A different expert set changes the hidden state of
 *     that token and, through attention, of every later position: the logits of a step that
 *     reads such a position may leave the logits bound, and its token may flip.
 * Everything else must hold: no other flip, and logits within cudaLogitTolerance at every
 * stored step that no routing near-tie precedes. Each excused step is named with its margin.
 * Random small MoE checkpoints hold a near-tie at most positions (the fixtures: at one of
 * the first few in nearly every case), so the second clause is capped: a routing flip is a
 * rare event (one excused failure in 3 of the 24 MoE cases on an H200), and a case that
 * needs it more than maxRoutingExcuses times fails (a broken engine fails most steps).
 */
import { cudaLogitTolerance } from './gpuCheck.js';

/** Relative router margin below which bf16 noise may change the chosen experts. */
export const routerTieBand = cudaLogitTolerance;

/** Failures of one case the routing clause may excuse (flips and logits excesses together). */
export const maxRoutingExcuses = 2;

export interface MeasuredFlip {
  step: number;
  /** The reference's top-1 minus top-2 logit margin at that step. */
  margin: number;
  /** The bf16 noise band of that logit row (bf16FlipMargin). */
  band: number;
}

export interface MeasuredCase {
  promptLength: number;
  /** Teacher-forced steps whose arg-max differs from the reference token. */
  flips: MeasuredFlip[];
  /** Norm-wise relative error of the logits at each stored step. */
  logitErrors: { step: number; error: number }[];
  /** The fixture's per-position relative router margins (absent for dense models). */
  routerRelativeMargins?: readonly number[];
}

export interface CaseJudgement {
  passed: boolean;
  detail: string;
}

interface Tie {
  position: number;
  margin: number;
}

/** The tightest routing near-tie among the positions step `step` reads, or null. */
function routerTieBefore(c: MeasuredCase, step: number): Tie | null {
  const margins = c.routerRelativeMargins;
  if (!margins) return null;
  let best: Tie | null = null;
  const last = Math.min(margins.length, c.promptLength + step);
  for (let p = 0; p < last; p++) {
    const m = margins[p]!;
    if (m < routerTieBand && (best === null || m < best.margin)) best = { position: p, margin: m };
  }
  return best;
}

const exp = (v: number) => v.toExponential(2);
const tieText = (t: Tie) => `router near-tie at position ${t.position} (relative margin ${exp(t.margin)} < ${routerTieBand})`;

export function judgeGoldenCase(c: MeasuredCase): CaseJudgement {
  let passed = true;
  let routingExcuses = 0;
  const flipNotes = c.flips.map((f) => {
    const base = `step ${f.step} (reference margin ${exp(f.margin)}, noise band ${exp(f.band)}`;
    if (f.margin < f.band) return `${base})`;
    const tie = routerTieBefore(c, f.step);
    if (tie) {
      routingExcuses++;
      return `${base}; after a ${tieText(tie)})`;
    }
    passed = false;
    return `${base}: outside the band)`;
  });
  let worst = 0;
  const excused: string[] = [];
  for (const { step, error } of c.logitErrors) {
    if (error <= cudaLogitTolerance) {
      worst = Math.max(worst, error);
      continue;
    }
    const tie = routerTieBefore(c, step);
    if (tie) {
      routingExcuses++;
      excused.push(`step ${step} relError ${exp(error)} after a ${tieText(tie)}`);
    }
    else {
      passed = false;
      worst = Math.max(worst, error);
    }
  }
  const parts = [
    flipNotes.length === 0 ? 'every teacher-forced step equal' : `flips: ${flipNotes.join(', ')}`,
    `worst logits relError ${exp(worst)} (bound ${cudaLogitTolerance})`,
  ];
  if (excused.length > 0) parts.push(`excused: ${excused.join(', ')}`);
  if (routingExcuses > maxRoutingExcuses) {
    passed = false;
    parts.push(`${routingExcuses} failures need the routing clause (at most ${maxRoutingExcuses} per case)`);
  }
  return { passed, detail: parts.join('; ') };
}
