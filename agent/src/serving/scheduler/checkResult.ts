/** The scheduler's check of what the engine returned for a step (step.ts's StepResult contract). */
import type { StepPlan, StepResult } from '@afd/shared';
import { numRowsOf } from './logprobRows.js';

/**
 * Checks that a result has what its step asked for: a token per sequence, one logprob row
 * per sampled sequence that asked, and a prompt row per token whose next token is known.
 * Throws naming the broken part (the engine broke the contract of step.ts).
 */
export function checkResult(plan: StepPlan, result: StepResult): void {
  if (result.tokenIds.length < plan.numSeqs) throw new Error(`engine returned ${result.tokenIds.length} token ids for a step of ${plan.numSeqs} sequences`);
  const x = plan.extras;
  if (!x) return;
  for (let i = 0; i < plan.numSeqs; i++) {
    const sampled = plan.sampleMask[i] === 1;
    const wantRows = sampled && x.numLogprobs[i]! >= 0 ? 1 : 0;
    if (numRowsOf(result.logprobs, i) !== wantRows) throw new Error(`engine returned ${numRowsOf(result.logprobs, i)} logprob rows for sequence ${i} of the step, expected ${wantRows}`);
    if (x.numPromptLogprobs[i]! < 0) continue;
    const numTokens = plan.tokenOffsets[i + 1]! - plan.tokenOffsets[i]!;
    const wantPrompt = numTokens - (sampled || x.nextPromptTokenIds[i]! < 0 ? 1 : 0);
    const got = numRowsOf(result.promptLogprobs, i);
    if (got !== wantPrompt) throw new Error(`engine returned ${got} prompt logprob rows for sequence ${i} of the step, expected ${wantPrompt}`);
  }
}
