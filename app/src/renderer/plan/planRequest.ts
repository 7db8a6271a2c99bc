/**
 * What the plan worker is sent and answers: a single-profile job (search.ts over N GPUs)
 * or a mixed cluster's (heteroSearch over card kinds), each tagged so the page knows which
 * table to show. Plain data both ways (structured clone): cost functions are built in the worker.
 */
import type { PlanResult } from '@afd/shared';
import { runMixedJob, type MixedJob, type MixedResult } from './mixedLogic.js';
import { runPlanJob, type PlanJob } from './planLogic.js';

export type PlanRequest = { kind: 'single'; job: PlanJob } | { kind: 'mixed'; job: MixedJob };

export type PlanOutcome = { kind: 'single'; result: PlanResult } | { kind: 'mixed'; result: MixedResult };

/** The worker's message back: the outcome, or the planner's error as a sentence. */
export type PlanReply = { ok: true; outcome: PlanOutcome } | { ok: false; error: string };

export function runPlanRequest(r: PlanRequest): PlanOutcome {
  return r.kind === 'single' ? { kind: 'single', result: runPlanJob(r.job) } : { kind: 'mixed', result: runMixedJob(r.job) };
}

/** The worker's answer to one message: an error thrown by the planner becomes a reply, never an uncaught one. */
export function replyTo(r: PlanRequest): PlanReply {
  try {
    return { ok: true, outcome: runPlanRequest(r) };
  } catch (err) {
    return { ok: false, error: err instanceof Error ? err.message : String(err) };
  }
}
