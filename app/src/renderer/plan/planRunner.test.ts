import { afterEach, describe, expect, it, vi } from 'vitest';
import { parseCostProfile } from '@afd/shared';
import { CPU_PROFILE_TEXT } from '../testing/planProfile.js';
import { defaultPlanInputs, planJob, runPlanJob, type PlanJob } from './planLogic.js';
import { workerRunner } from './planRunner.js';

const checked = planJob(parseCostProfile(CPU_PROFILE_TEXT), defaultPlanInputs);
if (!checked.ok) throw new Error(checked.error);
const job: PlanJob = checked.job;

/** A stand-in Worker: 'answer' replies like plan.worker.ts, 'fail' never loads. */
function fakeWorkers(mode: 'answer' | 'fail') {
  const made: FakeWorker[] = [];
  class FakeWorker {
    onmessage: ((e: { data: unknown }) => void) | null = null;
    onerror: ((e: { message: string }) => void) | null = null;
    terminated = false;
    constructor() {
      made.push(this);
    }
    postMessage(j: PlanJob) {
      setTimeout(() => {
        if (this.terminated) return;
        if (mode === 'fail') this.onerror?.({ message: 'failed to fetch the worker script' });
        else this.onmessage?.({ data: { ok: true, result: runPlanJob(j) } });
      }, 0);
    }
    terminate() {
      this.terminated = true;
    }
  }
  vi.stubGlobal('Worker', FakeWorker);
  return made;
}

afterEach(() => {
  vi.unstubAllGlobals();
});

describe('the plan worker runner', () => {
  it('runs a job in a worker and ends it after', async () => {
    const made = fakeWorkers('answer');
    const r = await workerRunner()(job);
    expect(r.rows[0]!.kind).toBe('colocated');
    expect(made).toHaveLength(1);
    expect(made[0]!.terminated).toBe(true);
  });

  it('a newer job ends the worker of the one still running', async () => {
    const made = fakeWorkers('answer');
    const run = workerRunner();
    void run(job);
    const r = await run({ ...job, query: { ...job.query, gpus: 8 } });
    expect(made[0]!.terminated).toBe(true);
    expect(r.rows[0]!.gpusUsed).toBe(8);
  });

  it('a worker that does not load: the job and the next run on the page', async () => {
    const made = fakeWorkers('fail');
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => undefined);
    const run = workerRunner();
    expect((await run(job)).rows.length).toBeGreaterThan(0);
    expect((await run(job)).rows.length).toBeGreaterThan(0);
    expect(made).toHaveLength(1);
    expect(warn).toHaveBeenCalledWith(expect.stringContaining('plan worker unavailable'));
    warn.mockRestore();
  });
});
