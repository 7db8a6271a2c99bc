import { describe, expect, it } from 'vitest';
import { median } from './serve/stats.js';
import { crossingsPerStep, formatTwoHosts, twoHostsReport, type DelaySample } from './twoHostsReport.js';

const sample = (delayMs: number, achievedDelayMs: number, stepMs: number): DelaySample => ({
  delayMs,
  achievedDelayMs,
  stepMs,
  stepMsRuns: [stepMs],
  itlMs: stepMs,
  wireUsPerLayer: [achievedDelayMs * 1000, achievedDelayMs * 1000],
});

describe('twoHostsReport', () => {
  it('models the slowdown as (2 x layers + 2) crossings of the delay', () => {
    expect(crossingsPerStep(4)).toBe(10);
    const r = twoHostsReport({
      topology: '2A2F',
      placement: 'world',
      backend: 'cpu',
      model: 'tiny-qwen3-moe',
      layers: 4,
      tokensPerRun: 96,
      repeats: 3,
      baseline: sample(0, 0.05, 7),
      delayed: sample(2, 2.25, 29),
      notes: [],
      commit: 'abc',
      command: 'afd-bench two-hosts',
    });
    expect(r.slowdownMs).toBe(22);
    expect(r.expected).toEqual({ perLayerCrossingsMs: 16, withControlRoundTripMs: 20, atAchievedDelayMs: 22 });
    expect(r.slowdownVsModel).toBeCloseTo(1, 5);
    expect(formatTwoHosts(r)).toMatch(/step 7\.00 ms -> 29\.00 ms at 2 ms one-way .*: \+22\.00 ms/);
  });

  it('takes medians', () => {
    expect(median([3, 1, 2])).toBe(2);
    expect(median([4, 1, 2, 3])).toBe(2.5);
    expect(() => median([])).toThrow(/no values/);
  });
});
