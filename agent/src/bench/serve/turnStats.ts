/**
 * Per-turn figures of the multi-turn dataset: TTFT and prefix-cache hits of turn 1 (cold:
 * only the shared system prompt can be in the cache) apart from turns >= 2 (the
 * conversation's history can be), and of every turn.
 */
import type { MultiTurnShape } from './conversations.js';
import { cachedTokensOf } from './runServeBench.js';
import { summarize, type Summary } from './stats.js';
import type { RequestOutcome } from './streamRequest.js';

/** One request of a conversation. */
export interface TurnOutcome extends RequestOutcome {
  conversation: number;
  /** 1-based. */
  turn: number;
}

export interface TurnGroupStats {
  /** Completed requests of the group. */
  requests: number;
  /** Their prompt tokens (usage.prompt_tokens, chat template included). */
  promptTokens: number;
  /** Their prompt tokens served from the prefix cache (usage.prompt_tokens_details.cached_tokens); null when the server reports none. */
  cachedTokens: number | null;
  /** cachedTokens / promptTokens; null when the server reports no cached tokens. */
  hitRatio: number | null;
  /** Requests with cached_tokens > 0; null when the server reports no cached tokens. */
  requestsWithHits: number | null;
  ttftMs: Summary;
}

export interface MultiTurnStats extends MultiTurnShape {
  /** Whether every text's token count was checked against the shape with the server's /tokenize. */
  lengthsChecked: boolean;
  /** Conversations whose every turn completed. */
  completedConversations: number;
  /** Turns never sent because an earlier turn of their conversation failed. */
  turnsNotSent: number;
  /** Turn 1 (cold: only the shared system prompt can hit). */
  firstTurn: TurnGroupStats;
  /** Turns >= 2 (the conversation's history can hit). */
  laterTurns: TurnGroupStats;
  /** Turn by turn, turn 1 first. */
  perTurn: (TurnGroupStats & { turn: number })[];
}

export function turnGroupStats(outcomes: readonly RequestOutcome[], percentiles: readonly number[]): TurnGroupStats {
  const ok = outcomes.filter((x) => x.ok);
  const promptTokens = ok.reduce((a, x) => a + x.promptTokens, 0);
  const cachedTokens = cachedTokensOf(ok);
  return {
    requests: ok.length,
    promptTokens,
    cachedTokens,
    hitRatio: cachedTokens === null || promptTokens === 0 ? null : cachedTokens / promptTokens,
    requestsWithHits: cachedTokens === null ? null : ok.filter((x) => (x.cachedTokens ?? 0) > 0).length,
    ttftMs: summarize(ok.map((x) => x.ttftMs), percentiles),
  };
}

export function multiTurnStats(shape: MultiTurnShape, lengthsChecked: boolean, outcomes: readonly TurnOutcome[], percentiles: readonly number[]): MultiTurnStats {
  const okTurns = new Map<number, number>();
  for (const x of outcomes) if (x.ok) okTurns.set(x.conversation, (okTurns.get(x.conversation) ?? 0) + 1);
  return {
    ...shape,
    lengthsChecked,
    completedConversations: [...okTurns.values()].filter((n) => n === shape.turns).length,
    turnsNotSent: shape.numConversations * shape.turns - outcomes.length,
    firstTurn: turnGroupStats(outcomes.filter((x) => x.turn === 1), percentiles),
    laterTurns: turnGroupStats(outcomes.filter((x) => x.turn >= 2), percentiles),
    perTurn: Array.from({ length: shape.turns }, (_, i) => ({ turn: i + 1, ...turnGroupStats(outcomes.filter((x) => x.turn === i + 1), percentiles) })),
  };
}
