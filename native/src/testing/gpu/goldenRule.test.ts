import { describe, expect, it } from 'vitest';
import { judgeGoldenCase, maxRoutingExcuses, referenceNoiseFactor, routerTieBand } from './goldenRule.js';

// Prompt of 3 tokens: step s reads positions 0 .. 2 + s.
const base = { promptLength: 3, flips: [], logitErrors: [{ step: 0, error: 1e-3 }, { step: 15, error: 5e-3 }] };
const margins = (tieAt: number | null, n = 34) => Array.from({ length: n }, (_, p) => (p === tieAt ? routerTieBand / 10 : 0.5));

describe('judgeGoldenCase (bf16 rule)', () => {
  it('passes equal tokens and logits within the bound, naming the worst error', () => {
    const v = judgeGoldenCase(base);
    expect(v.passed).toBe(true);
    expect(v.detail).toMatch(/every teacher-forced step equal; worst logits relError 5\.00e-3/);
  });

  it('accepts a flip inside its logit noise band and fails one outside it without a routing tie', () => {
    const inside = judgeGoldenCase({ ...base, flips: [{ step: 4, margin: 0.005, band: 0.01 }] });
    expect(inside.passed).toBe(true);
    const outside = judgeGoldenCase({ ...base, flips: [{ step: 4, margin: 0.3, band: 0.01 }], routerRelativeMargins: margins(null) });
    expect(outside.passed).toBe(false);
    expect(outside.detail).toMatch(/step 4 .*outside the band/);
  });

  it('excuses a flip and a logits excess only at steps that read a routing near-tie', () => {
    // The tie sits at position 10: steps 8 and later read it, steps 0..7 do not.
    const m = margins(10);
    const late = judgeGoldenCase({ ...base, flips: [{ step: 9, margin: 0.3, band: 0.01 }], logitErrors: [{ step: 15, error: 0.3 }], routerRelativeMargins: m });
    expect(late.passed).toBe(true);
    expect(late.detail).toMatch(/after a router near-tie at position 10/);
    expect(late.detail).toMatch(/excused: step 15 relError 3\.00e-1/);
    const early = judgeGoldenCase({ ...base, flips: [{ step: 7, margin: 0.3, band: 0.01 }], routerRelativeMargins: m });
    expect(early.passed).toBe(false);
    const earlyLogits = judgeGoldenCase({ ...base, logitErrors: [{ step: 1, error: 0.3 }], routerRelativeMargins: m });
    expect(earlyLogits.passed).toBe(false);
    expect(earlyLogits.detail).toMatch(/worst logits relError 3\.00e-1/);
  });

  it('fails a case that needs the routing clause more than maxRoutingExcuses times', () => {
    const m = margins(0);  // a tie at the first position: every step reads it
    const flips = Array.from({ length: maxRoutingExcuses + 1 }, (_, i) => ({ step: 2 * i + 1, margin: 0.3, band: 0.01 }));
    const many = judgeGoldenCase({ ...base, flips, routerRelativeMargins: m });
    expect(many.passed).toBe(false);
    expect(many.detail).toMatch(new RegExp(`${maxRoutingExcuses + 1} failures need the routing clause \\(at most ${maxRoutingExcuses} per case\\)`));
    const few = judgeGoldenCase({ ...base, flips: flips.slice(0, maxRoutingExcuses - 1), logitErrors: [{ step: 31, error: 0.3 }], routerRelativeMargins: m });
    expect(few.passed).toBe(true);
  });

  it('excuses nothing for a dense model (no router margins)', () => {
    expect(judgeGoldenCase({ ...base, logitErrors: [{ step: 31, error: 0.05 }] }).passed).toBe(false);
  });

  it('names the tightest tie among the positions read', () => {
    const m = margins(2);
    m[5] = routerTieBand / 100;
    const v = judgeGoldenCase({ ...base, logitErrors: [{ step: 31, error: 0.1 }], routerRelativeMargins: m });
    expect(v.passed).toBe(true);
    expect(v.detail).toMatch(/position 5 \(relative margin 2\.00e-4/);
  });
});

describe("judgeGoldenCase (transformers' own bf16 noise)", () => {
  const noise = { errors: Array.from({ length: 32 }, (_, s) => (s === 3 ? 0.15 : 0.03)), flipSteps: [8], source: 'n.json' };

  it('excuses a flip where transformers bf16 flips too, or inside its noise at that step applied to the row', () => {
    const same = judgeGoldenCase({ ...base, flips: [{ step: 8, margin: 0.3, band: 0.04, rowRms: 2 }], referenceNoise: noise });
    expect(same.passed).toBe(true);
    expect(same.detail).toMatch(/transformers' own bf16 flips at this step too/);
    // Step 3: 0.15 x rms 2 = 0.3 > margin 0.25; step 4: 0.03 x 2 = 0.06 < 0.25.
    const inside = judgeGoldenCase({ ...base, flips: [{ step: 3, margin: 0.25, band: 0.04, rowRms: 2 }], referenceNoise: noise });
    expect(inside.passed).toBe(true);
    expect(inside.detail).toMatch(/inside transformers' bf16 noise at this step \(relError 1\.50e-1 x row rms 2\.00e\+0 = 3\.00e-1\)/);
    const outside = judgeGoldenCase({ ...base, flips: [{ step: 4, margin: 0.25, band: 0.04, rowRms: 2 }], referenceNoise: noise });
    expect(outside.passed).toBe(false);
    expect(outside.detail).toMatch(/step 4 .*outside the band/);
  });

  it('bounds logits by referenceNoiseFactor x transformers error at the same step, and only where measured', () => {
    const within = judgeGoldenCase({ ...base, logitErrors: [{ step: 3, error: 0.29 }, { step: 5, error: 0.05 }], referenceNoise: noise });
    expect(within.passed).toBe(true);
    expect(within.detail).toMatch(new RegExp(`step 3 relError 2\\.90e-1 <= ${referenceNoiseFactor} x transformers' bf16 1\\.50e-1`));
    expect(within.detail).toMatch(/within the reference's bf16 noise \(n\.json\)/);
    const beyond = judgeGoldenCase({ ...base, logitErrors: [{ step: 5, error: 0.07 }], referenceNoise: noise });
    expect(beyond.passed).toBe(false);
    expect(beyond.detail).toMatch(/worst logits relError 7\.00e-2/);
    const unmeasured = judgeGoldenCase({ ...base, logitErrors: [{ step: 40, error: 0.03 }], referenceNoise: noise });
    expect(unmeasured.passed).toBe(false);
  });

  it('changes nothing for a case without a noise record', () => {
    expect(judgeGoldenCase({ ...base, flips: [{ step: 8, margin: 0.3, band: 0.04, rowRms: 2 }] }).passed).toBe(false);
    expect(judgeGoldenCase({ ...base, logitErrors: [{ step: 3, error: 0.03 }] }).passed).toBe(false);
  });
});
