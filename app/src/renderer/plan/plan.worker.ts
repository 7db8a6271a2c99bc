/** Runs the planner off the page's thread: a big cluster (64 GPUs) takes seconds. */
import { runPlanJob, type PlanJob } from './planLogic.js';

self.onmessage = (e: MessageEvent<PlanJob>) => {
  try {
    self.postMessage({ ok: true, result: runPlanJob(e.data) });
  } catch (err) {
    self.postMessage({ ok: false, error: err instanceof Error ? err.message : String(err) });
  }
};
