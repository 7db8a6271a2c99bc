/**
 * Published AFD results re-created (docs/planner.md, "Published results re-created"): each
 * case's stated hardware and model through roofline costs and the step simulator, with one
 * global set of efficiency factors. A claim the simulator reproduces is an `it`; one it does
 * not is an `it.fails` asserting the published sign and size, so a simulator change that
 * starts reproducing it turns the test red and the doc gets updated.
 */
import { describe, expect, it } from 'vitest';
import { modelPreset } from './modelShape.js';
import { compareAfdColocated, dispatchFanout, publishedCases, ratioGrid, type Comparison } from './published.js';

const cases = publishedCases();
const cache = new Map<string, Comparison>();
const run = (id: string): Comparison => {
  let c = cache.get(id);
  if (!c) cache.set(id, (c = compareAfdColocated(cases.find((k) => k.id === id)!.deployment)));
  return c;
};
const T = 120_000;

describe('published results re-created', () => {
  it('every case names its source, what it states and what we assumed', () => {
    expect(cases.map((c) => c.id)).toEqual(['fastafd-gb200', 'megascale-infer', 'step3', 'dead-zone', 'parity']);
    for (const c of cases) for (const k of ['claim', 'source', 'stated', 'assumed'] as const) expect(c[k].length).toBeGreaterThan(5);
    expect(dispatchFanout(modelPreset('deepseek-v3'), 32)).toBeCloseTo(32 * (1 - (31 / 32) ** 8), 12);
  });

  it('Step-3 (H800-class, 4K, FP8, TPOT 50 ms): about 4,039 tok/s per GPU, and above DeepSeek-V3 in the same setup (2,324)', () => {
    const step3 = run('step3');
    expect(step3.afd!.tpotMs).toBeLessThanOrEqual(50);
    expect(step3.afd!.perGpu).toBeGreaterThan(4039 * 0.75); // simulated 4,215 (+4%)
    expect(step3.afd!.perGpu).toBeLessThan(4039 * 1.25);
    const d = cases.find((k) => k.id === 'step3')!.deployment;
    const dsv3 = compareAfdColocated({ ...d, model: modelPreset('deepseek-v3', { bytesPerElement: 1, kvBytesPerElement: 2 }) });
    expect(dsv3.afd!.perGpu).toBeGreaterThan(2324 * 0.75); // simulated 1,941 (-16%): its attention ranks' KV stops them at batch 128
    expect(dsv3.afd!.perGpu).toBeLessThan(2324 * 1.25);
    expect(step3.afd!.perGpu / dsv3.afd!.perGpu).toBeGreaterThan(1.3); // published 1.74, simulated 2.17
  }, T);

  it('memory bounds the shapes: Qwen3-30B-A3B leaves a colocated H100 room for 32 sequences of 4K, its attention ranks 128', () => {
    const parity = run('parity');
    expect(parity.colocated!.batch).toBe(32); // 61 GB of weights + 32 x 4096 x 98,304 B of KV = 74 GB of 80; 64 would need 87
    expect(parity.afd!.batch).toBe(128); // an attention rank: 3 GB of weights + 52 GB of KV
  }, T);

  it('closed-form A:F ratio (arXiv 2601.21351) against the simulated optimum: within 10% at 9 of 16 grid points, median 9%', () => {
    const grid = ratioGrid();
    expect(grid).toHaveLength(16);
    const errors = grid.map((p) => p.error).sort((x, y) => x - y);
    expect(errors[Math.floor(errors.length / 2)]).toBeLessThan(0.1); // the median point: 9%
    expect(errors.filter((e) => e <= 0.1).length).toBeGreaterThanOrEqual(9); // published: within 10% across workloads
    expect(errors[errors.length - 1]).toBeLessThan(0.35); // worst: 30% (DeepSeek-V2-Lite, batch 64)
  }, T);

  it('MegaScale-Infer: AFD > 1.2x colocated per GPU at the uniform 4K / TPOT 50 ms (published up to 1.90x; simulated 1.32x), but not at 2K / 150 ms (0.89x)', () => {
    expect(run('megascale-infer').ratio!).toBeGreaterThan(1.2);
    const d = cases.find((k) => k.id === 'megascale-infer')!.deployment;
    expect(compareAfdColocated({ ...d, context: 2048, tpotMs: 150 }).ratio!).toBeLessThan(1);
  }, T);

  // Not reproduced (docs/planner.md says why): these assert the published claim and are expected to fail.
  it.fails('the reference system on GPUs: AFD gains nothing on one node (published +1%; simulated 2.07x since memory bounds the colocated batch at 32)', () => {
    const r = run('parity').ratio!;
    expect(r).toBeLessThan(1.05);
    expect(r).toBeGreaterThan(0.8);
  }, T);

  it.fails('FastAFD: AFD > 1.2x colocated per GPU on GB200 NVL72 (published 1.35-1.45x; simulated 0.94x)', () => {
    expect(run('fastafd-gb200').ratio!).toBeGreaterThan(1.2);
  }, T);

  it.fails('Baidu dead zone: AFD below EP on an ordinary cluster (published; simulated 1.11x, AFD slightly ahead)', () => {
    expect(run('dead-zone').ratio!).toBeLessThan(1);
  }, T);
});
