/**
 * One engine step whose plan has allowed-token mask rows (StepExtras.maskRows), with the
 * masks computed while the engine runs the step's layers:
 *
 *   pending = engine.step(plan)                     // tokenMask absent: deferred
 *   masks   = await grammar.advance(rows)           // each matcher: accept its new tokens, then mask
 *   engine.provideTokenMask(masks); result = await pending
 *
 * An engine without provideTokenMask gets the masks in plan.extras.tokenMask before the step.
 * The tokens a sequence sampled since its last masked step are fed to its matcher first.
 *
 * A row whose grammar state is gone (the match worker restarted, or a sampled token the
 * grammar refused) allows every token and its request fails after the step; when the whole
 * advance fails, every row does. The other sequences of the step go on: the mask is never
 * withdrawn (that would fail the whole step). Below min tokens a row's stop ids are cleared
 * unless the grammar can only end there.
 */
import type { StepPlan, StepResult } from '@afd/shared';
import type { EngineLike } from '../engineLike.js';
import type { Sequence } from '../scheduler/Sequence.js';
import { ServingError } from '../ServingError.js';
import type { AdvanceResult, GrammarMatcherRef, GrammarService } from './GrammarService.js';
import { banUnlessOnly, fillRow } from './maskBits.js';

/** What the serving loop needs of the grammar service. */
export type GrammarBackend = Pick<GrammarService, 'compile' | 'newMatcher' | 'advance' | 'free' | 'wordsPerRow'>;

/** A constrained sequence's grammar state. */
export interface SeqGrammar {
  matcher: GrammarMatcherRef;
  /** Output tokens its matcher has accepted. */
  fed: number;
}

/** A sequence with a mask row in the step, in row order. */
export interface MaskedRow {
  seq: Sequence;
  /** null when the request has ended meanwhile (its row allows every token). */
  grammar: SeqGrammar | null;
}

export interface MaskedStepResult {
  result: StepResult;
  /** Sequences whose grammar failed: their requests end with this error (their token is void). */
  failed: Map<Sequence, ServingError>;
}

const grammarError = (why: string): ServingError => new ServingError('engine_error', `structured output failed: ${why}; retry the request`);

export async function runMaskedStep(engine: EngineLike, plan: StepPlan, rows: readonly MaskedRow[], grammar: GrammarBackend): Promise<MaskedStepResult> {
  const live = rows.filter((r) => r.grammar !== null);
  const advancing = grammar.advance(live.map((r) => ({ matcher: r.grammar!.matcher, newTokens: r.seq.outputIds.slice(r.grammar!.fed) })));
  const deferred = engine.provideTokenMask !== undefined;
  const pending = deferred ? engine.step(plan) : null;
  pending?.catch(() => undefined); // awaited below; it may fail while the masks are computed
  const failed = new Map<Sequence, ServingError>();
  const masks = await masksOf(advancing, rows, grammar.wordsPerRow, failed);
  if (pending) {
    engine.provideTokenMask!(masks);
    return { result: await pending, failed };
  }
  plan.extras!.tokenMask = masks;
  return { result: await engine.step(plan), failed };
}

/** The step's mask rows (rows in order); what failed goes into `failed`. */
async function masksOf(advancing: Promise<AdvanceResult>, rows: readonly MaskedRow[], words: number, failed: Map<Sequence, ServingError>): Promise<Int32Array> {
  const masks = new Int32Array(rows.length * words);
  let advanced: AdvanceResult | null = null;
  try {
    advanced = await advancing;
  } catch (err) {
    for (const r of rows) if (r.grammar) failed.set(r.seq, grammarError((err as Error).message));
  }
  let k = 0; // row in `advanced` (live rows only)
  rows.forEach((r, i) => {
    if (!r.grammar || !advanced) return fillRow(masks, i, words, -1);
    const j = k++;
    const status = advanced.status[j];
    if (status === 'rejected' || status === 'lost') {
      failed.set(r.seq, grammarError(advanced.problems[j] ?? status));
      return fillRow(masks, i, words, -1);
    }
    masks.set(advanced.masks.subarray(j * words, (j + 1) * words), i * words);
    r.grammar.fed = r.seq.outputIds.length;
    if (r.seq.belowMinTokens) banUnlessOnly(masks, i, words, r.seq.stopTokenIds);
  });
  return masks;
}
