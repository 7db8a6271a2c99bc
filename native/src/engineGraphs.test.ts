import { rm } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { engineGraphChecks } from './testing/gpu/engineGraphCheck.js';
import { Engine } from './engine.js';
import { generateGreedy, roleSpec, scatteredBlocks, writeTinyModel } from './testing/engineTesting.js';
import type { ModelLoadSpec } from './modelSpec.js';

// CUDA graph options on the CPU backend: accepted, ignored (eager, counters 0, no pad
// block), and validated. The GPU behaviour is checked by testing/gpu/engineGraphCheck.ts.
describe('Engine graph options on the CPU backend', () => {
  let dir = '';
  let spec: ModelLoadSpec;
  beforeAll(async () => {
    dir = await writeTinyModel('qwen3_moe', 5);
    spec = await roleSpec(dir, 'colocated');
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('runs eagerly with decode-only graphs asked for: same tokens and logits, counters stay 0', async () => {
    const opts = { backend: 'cpu', threads: 1, numKvBlocks: 31, kvBlockSize: 4 } as const;
    const off = await Engine.load(spec, { ...opts, graphPolicy: 'off' });
    const on = await Engine.load(spec, { ...opts, graphPolicy: 'decode-only', graphBatchBuckets: [1, 2, 4] });
    try {
      expect(on.info.numKvBlocks).toBe(31);
      const blocks = scatteredBlocks(5, 1, 31);
      const a = await generateGreedy(off, [3, 1, 4, 1, 5, 9], 6, { chunk: 3, blocks });
      const b = await generateGreedy(on, [3, 1, 4, 1, 5, 9], 6, { chunk: 3, blocks });
      expect(b.tokens).toEqual(a.tokens);
      expect(b.logits).toEqual(a.logits);
      expect(on.stats()).toMatchObject({ graphHits: 0, graphMisses: 0, graphCaptures: 0 });
    } finally {
      off.close();
      on.close();
    }
  });

  it('refuses an unknown policy and buckets that are not strictly ascending', async () => {
    await expect(Engine.load(spec, { backend: 'cpu', graphPolicy: 'always' as 'off' })).rejects.toThrow(/known: off, decode-only/);
    await expect(Engine.load(spec, { backend: 'cpu', graphBatchBuckets: [4, 2] })).rejects.toThrow(/strictly ascending/);
    await expect(Engine.load(spec, { backend: 'cpu', graphBatchBuckets: [] })).rejects.toThrow(/at least one bucket/);
    await expect(Engine.load(spec, { backend: 'cpu', graphBatchBuckets: [1, 2.5] })).rejects.toThrow(/graphBatchBuckets\[1\] must be an integer/);
  });
});

// The whole graph step path (padding, pad block, keys, packed inputs, replay, counters,
// epoch invalidation) on the CPU backend with capture emulated: ops recorded during the
// capture are replayed against the addresses they were recorded with, like a CUDA graph.
describe('Engine graph step path with emulated capture (backend cpu-graphs)', () => {
  it('gives the eager tokens and logits, and counts captures, hits and misses', { timeout: 120_000 }, async () => {
    const checks = await engineGraphChecks('cpu-graphs', 1);
    expect(checks.length).toBe(15); // 3 checks x qwen3_moe, qwen3, llama, deepseek_v2, deepseek_v3
    expect(checks.filter((c) => !c.passed).map((c) => `${c.name}: ${c.detail}`)).toEqual([]);
    // CPU math is row-independent: replays are bitwise equal to the eager steps.
    for (const c of checks.filter((x) => x.name.includes('on vs off'))) expect(c.detail).toMatch(/(\d+)\/\1 steps bitwise equal/);
  });
});
