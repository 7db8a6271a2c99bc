import { buildStepPlan, checkStepPlan } from '@afd/shared';
import { describe, expect, it } from 'vitest';
import { planHostSeqs, runPlanHostBench } from './planHost.js';

describe('afd-bench plan-host', () => {
  it("builds the served benchmark's decode step: every sequence with its distinct seen tokens, a logit bias and penalties", () => {
    const vocab = 151936;
    const plan = buildStepPlan(planHostSeqs({ batch: 4, seen: 700, bias: 16, context: 1024 }, vocab));
    const x = plan.extras!;
    expect(Array.from(x.seenOffsets)).toEqual([0, 700, 1400, 2100, 2800]);
    expect(Array.from(x.biasOffsets)).toEqual([0, 16, 32, 48, 64]);
    expect(x.seenCounts.filter((c) => c === 0)).toHaveLength(4 * 175);
    expect(plan.maxBlocksPerSeq).toBe(65);
    expect(checkStepPlan(plan, { vocabSize: vocab, kvBlockSize: 16, numKvBlocks: 4 * 65 })).toEqual([]);
  });

  it('reports microseconds per step of each host stage (without the engine here)', async () => {
    const report = await runPlanHostBench({ batch: 2, seen: 10, bias: 2, context: 16, steps: 3, engineSteps: 1, engine: false, threads: 1 });
    expect(report).toMatchObject({ bench: 'plan-host', batch: 2, seenPerSeq: 10, biasPerSeq: 2, vocabSize: 151936 });
    for (const t of [report.buildStepPlan, report.checkStepPlan, report.checkStepPlanShape]) expect(t.medianUs).toBeGreaterThanOrEqual(t.p10Us);
    expect(report.engineStepJsThread).toBeUndefined();
  });
});
