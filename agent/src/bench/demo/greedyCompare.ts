/** Our greedy answers against transformers' greedy answers, token for token. */
import type { ModeReport } from './questionEval.js';
import type { TrainingMetrics } from './trainingMetrics.js';

/** Either side may or may not keep the token it stopped on; compare what comes before it. */
function withoutStop(ids: readonly number[], stopIds: readonly number[]): readonly number[] {
  return ids.length > 0 && stopIds.includes(ids.at(-1)!) ? ids.slice(0, -1) : ids;
}

/** How many of our greedy answers have exactly transformers' tokens (a trailing stop token on either side aside). */
export function compareGreedy(ours: ModeReport, metrics: TrainingMetrics | null, stopIds: readonly number[]): { compared: number; sameTokens: number; samePrompt: number; differing: string[] } | null {
  const ref = metrics?.reference_answers;
  if (!ref) return null;
  const byId = new Map(ref.map((r) => [r.id, r]));
  let compared = 0;
  let sameTokens = 0;
  let samePrompt = 0;
  const differing: string[] = [];
  for (const a of ours.answers) {
    const r = byId.get(a.id);
    if (!r) continue;
    compared += 1;
    if (r.promptIds.join(',') === a.promptIds.join(',')) samePrompt += 1;
    if (withoutStop(r.greedyIds, stopIds).join(',') === withoutStop(a.tokenIds, stopIds).join(',')) sameTokens += 1;
    else differing.push(a.id);
  }
  return { compared, sameTokens, samePrompt, differing };
}
