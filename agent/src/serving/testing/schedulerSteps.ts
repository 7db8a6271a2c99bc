/** Test helper: scheduler configs, fake step results and plan views for the scheduler's tests. */
import { expect } from 'vitest';
import { checkStepPlan, type StepPlan, type StepResult } from '@afd/shared';
import type { Scheduler, SchedulerConfig } from '../scheduler/Scheduler.js';

/** A small scheduler config (8 sequences, 64 tokens a step, no DBO) with `over` applied. */
export function schedulerConfig(over: Partial<SchedulerConfig> = {}): SchedulerConfig {
  return {
    maxNumSeqs: 8,
    maxNumBatchedTokens: 64,
    longPrefillTokenThreshold: 0,
    maxModelLen: 1024,
    dbo: { enabled: false, decodeTokenThreshold: 32, prefillTokenThreshold: 512 },
    ...over,
  };
}

/** Fake engine output: token 5 for every sequence (or `tok`), for a plan the shared check accepts. */
export function stepResult(plan: StepPlan, tok = 5): StepResult {
  expect(checkStepPlan(plan)).toEqual([]);
  return { tokenIds: new Int32Array(plan.numSeqs).fill(tok), stepTimeMs: 1 };
}

/** The plan's block-table rows, one per sequence. */
export function blockRows(plan: StepPlan): number[][] {
  const out: number[][] = [];
  for (let i = 0; i < plan.numSeqs; i++) out.push([...plan.blockTables.subarray(i * plan.maxBlocksPerSeq, (i + 1) * plan.maxBlocksPerSeq)]);
  return out;
}

/** Schedules and updates until no work is left (token `tok` every step); fails after `maxSteps`. */
export function runToEnd(s: Scheduler, tok = 5, maxSteps = 2000): void {
  for (let i = 0; s.hasWork(); i++) {
    if (i > maxSteps) throw new Error('no progress');
    const step = s.schedule();
    expect(step).not.toBeNull();
    s.update(step!, stepResult(step!.plan, tok));
  }
}
