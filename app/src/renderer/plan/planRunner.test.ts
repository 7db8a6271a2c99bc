import { afterEach, describe, expect, it, vi } from 'vitest';
import { parseCostProfile } from '@afd/shared';
import { CPU_PROFILE_TEXT } from '../testing/planProfile.js';
import { defaultPlanInputs, planJob, type PlanJob } from './planLogic.js';
import { defaultMixedInputs, mixedJob } from './mixedLogic.js';
import { workerRunner } from './planRunner.js';
import { replyTo, type PlanOutcome, type PlanRequest } from './planRequest.js';

const checked = planJob(parseCostProfile(CPU_PROFILE_TEXT), defaultPlanInputs);
if (!checked.ok) throw new Error(checked.error);
const job: PlanJob = checked.job;
const single = (j: PlanJob): PlanRequest => ({ kind: 'single', job: j });
const rowsOf = (o: PlanOutcome) => (o.kind === 'single' ? o.result.rows : []);

/** A stand-in Worker: 'answer' replies as plan.worker.ts does (replyTo), 'fail' never loads. */
function fakeWorkers(mode: 'answer' | 'fail') {
  const made: FakeWorker[] = [];
  class FakeWorker {
    onmessage: ((e: { data: unknown }) => void) | null = null;
    onerror: ((e: { message: string }) => void) | null = null;
    terminated = false;
    constructor() {
      made.push(this);
    }
    postMessage(r: PlanRequest) {
      setTimeout(() => {
        if (this.terminated) return;
        if (mode === 'fail') this.onerror?.({ message: 'failed to fetch the worker script' });
        else this.onmessage?.({ data: replyTo(structuredClone(r)) });
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
    const r = await workerRunner()(single(job));
    expect(r.kind).toBe('single');
    expect(rowsOf(r)[0]!.kind).toBe('colocated');
    expect(made).toHaveLength(1);
    expect(made[0]!.terminated).toBe(true);
  });

  it('a newer job ends the worker of the one still running', async () => {
    const made = fakeWorkers('answer');
    const run = workerRunner();
    void run(single(job));
    const r = await run(single({ ...job, query: { ...job.query, gpus: 8 } }));
    expect(made[0]!.terminated).toBe(true);
    expect(rowsOf(r)[0]!.gpusUsed).toBe(8);
  });

  it('a worker that does not load: the job and the next run on the page', async () => {
    const made = fakeWorkers('fail');
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => undefined);
    const run = workerRunner();
    expect(rowsOf(await run(single(job))).length).toBeGreaterThan(0);
    expect(rowsOf(await run(single(job))).length).toBeGreaterThan(0);
    expect(made).toHaveLength(1);
    expect(warn).toHaveBeenCalledWith(expect.stringContaining('plan worker unavailable'));
    warn.mockRestore();
  });

  it('a mixed cluster goes to the worker as plain data and comes back tagged, the kinds described', async () => {
    fakeWorkers('answer');
    const m = mixedJob({ ...defaultMixedInputs, rows: [{ card: 'h200', gpus: 2, price: 3, costs: 'roofline' }, { card: 'h100', gpus: 2, price: 2, costs: 'roofline' }] }, { ...defaultPlanInputs, link: 'nvlink4' }, null);
    if (!m.ok) throw new Error(m.error);
    // Plain data: what the page posts survives a structured clone unchanged (no cost functions).
    expect(structuredClone(m.job)).toEqual(m.job);
    const r = await workerRunner()({ kind: 'mixed', job: m.job });
    if (r.kind !== 'mixed') throw new Error('not a mixed outcome');
    expect(r.result.cards.map((c) => [c.card, c.price])).toEqual([['h200', 3], ['h100', 2]]);
    expect(r.result.rows.length).toBeGreaterThan(0);
    expect(r.result.bestByPrice).not.toBeNull();
    expect(r.result.linkSource).toMatch(/NVLink/);
  });

  it("the planner's error comes back as a reply the runner rejects with", async () => {
    fakeWorkers('answer');
    const m = mixedJob({ ...defaultMixedInputs, rows: [{ card: 'x9000', gpus: 2, price: NaN, costs: 'roofline' }, { card: 'h100', gpus: 2, price: NaN, costs: 'roofline' }] }, { ...defaultPlanInputs, link: 'nvlink4' }, null);
    if (!m.ok) throw new Error(m.error);
    expect(replyTo({ kind: 'mixed', job: m.job })).toEqual({ ok: false, error: expect.stringMatching(/^unknown card "x9000": known cards are h100/) });
    await expect(workerRunner()({ kind: 'mixed', job: m.job })).rejects.toThrow(/unknown card "x9000"/);
  });
});
