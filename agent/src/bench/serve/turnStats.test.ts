/** Per-turn figures of the multi-turn dataset. */
import { describe, expect, it } from 'vitest';
import type { RequestOutcome } from './streamRequest.js';
import { multiTurnStats, turnGroupStats, type TurnOutcome } from './turnStats.js';

function outcome(conversation: number, turn: number, ttftMs: number, promptTokens: number, cachedTokens: number | null, ok = true): TurnOutcome {
  const base: RequestOutcome = { ok, error: ok ? null : 'HTTP 500', ttftMs, itlMs: [], e2eMs: ttftMs + 10, promptTokens, outputTokens: 4, cachedTokens, text: 'x' };
  return { ...base, conversation, turn };
}

const shape = { sharedPrefixLen: 100, numConversations: 3, turns: 3, turnInputLen: 10, turnOutputLen: 4 };

describe('multiTurnStats', () => {
  it('splits TTFT and cache hits into turn 1 and turns >= 2, and turn by turn', () => {
    const outcomes = [
      outcome(0, 1, 100, 110, 0),
      outcome(1, 1, 60, 110, 96),
      outcome(0, 2, 20, 130, 112),
      outcome(1, 2, 10, 130, 112),
      outcome(0, 3, 30, 150, 128),
      outcome(1, 3, 14, 150, 144),
      outcome(2, 1, 50, 110, 96),
      outcome(2, 2, 999, 0, null, false), // ends conversation 2: its turn 3 is never sent
    ];
    const m = multiTurnStats(shape, true, outcomes, [50, 99]);
    expect(m).toMatchObject({ ...shape, lengthsChecked: true, completedConversations: 2, turnsNotSent: 1 });
    expect(m.firstTurn).toMatchObject({ requests: 3, promptTokens: 330, cachedTokens: 192, requestsWithHits: 2 });
    expect(m.firstTurn.hitRatio).toBeCloseTo(192 / 330);
    expect(m.firstTurn.ttftMs.mean).toBeCloseTo(70);
    expect(m.firstTurn.ttftMs.median).toBe(60);
    expect(m.laterTurns).toMatchObject({ requests: 4, promptTokens: 560, cachedTokens: 496, requestsWithHits: 4 });
    expect(m.laterTurns.ttftMs.mean).toBeCloseTo(18.5); // the failed turn's TTFT is not counted
    expect(m.laterTurns.ttftMs.percentiles['p99']).toBeCloseTo(29.7);
    expect(m.perTurn.map((t) => [t.turn, t.requests, t.cachedTokens])).toEqual([
      [1, 3, 192],
      [2, 2, 224],
      [3, 2, 272],
    ]);
    expect(m.perTurn[2]!.hitRatio).toBeCloseTo(272 / 300);
  });

  it('reports null cache figures when the server reports no cached tokens', () => {
    const g = turnGroupStats([outcome(0, 1, 5, 50, null), outcome(0, 2, 5, 60, null)], [99]);
    expect(g).toMatchObject({ requests: 2, promptTokens: 110, cachedTokens: null, hitRatio: null, requestsWithHits: null });
    expect(turnGroupStats([], [99])).toMatchObject({ requests: 0, promptTokens: 0, cachedTokens: null, hitRatio: null, ttftMs: { mean: 0 } });
  });
});
