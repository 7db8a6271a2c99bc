/**
 * Runs plan jobs: each in a fresh worker (a newer job ends the one still running, so typing
 * a GPU count never queues stale searches), or inline where no worker can start (tests, or
 * a page where the worker fails to load).
 */
import { runPlanRequest, type PlanOutcome, type PlanReply, type PlanRequest } from './planRequest.js';

/** Resolves with the outcome, rejects with the planner's error; a superseded job never settles. */
export type PlanRunner = (req: PlanRequest) => Promise<PlanOutcome>;

export const inlineRunner: PlanRunner = async (req) => runPlanRequest(req);

/** The page's runner: a worker per job, inline when Worker is missing or will not start. */
export function workerRunner(): PlanRunner {
  let current: Worker | null = null;
  let broken = false;
  return (req) => {
    if (broken) return inlineRunner(req);
    current?.terminate();
    current = null;
    let w: Worker;
    try {
      w = new Worker(new URL('./plan.worker.ts', import.meta.url), { type: 'module', name: 'afd-plan' });
    } catch {
      return inlineRunner(req);
    }
    current = w;
    return new Promise<PlanOutcome>((resolve, reject) => {
      w.onmessage = (e: MessageEvent<PlanReply>) => {
        w.terminate();
        if (current === w) current = null;
        if (e.data.ok) resolve(e.data.outcome);
        else reject(new Error(e.data.error));
      };
      // The worker itself failed (it would not load): plan on the page from now on.
      w.onerror = (e) => {
        w.terminate();
        if (current !== w) return;
        current = null;
        broken = true;
        console.warn(`plan worker unavailable (${e.message || 'it did not start'}); planning on the page's main thread`);
        inlineRunner(req).then(resolve, reject);
      };
      w.postMessage(req);
    });
  };
}
