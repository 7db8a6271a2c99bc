import { rm } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { engineGraphChecks } from './testing/gpu/engineGraphCheck.js';
import { Engine } from './engine.js';
import { generateGreedy, roleSpec, scatteredBlocks, writeTinyModel } from './testing/engineTesting.js';
import type { ModelLoadSpec } from './modelSpec.js';
import { buildStepPlan, type PlanSeq, type StepResult } from '@afd/shared';
import { addonForBackend } from './testing/testingAddon.js';

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

// Bias, penalties and logprobs run after the graph (sampling is eager): a graphed decode
// step with them equals the eager one; a step that asks prompt logprobs never replays.
describe('extras on the graph step path (backend cpu-graphs)', () => {
  it('gives the eager tokens and logprobs on replays; a prompt-logprob step runs eagerly (a miss)', async () => {
    const dir = await writeTinyModel('qwen3_moe', 6);
    const spec = await roleSpec(dir, 'colocated');
    const opts = { threads: 1, numKvBlocks: 31, kvBlockSize: 4 };
    const eager = await Engine.loadWith(addonForBackend('cpu'), spec, { ...opts, backend: 'cpu' });
    const graphed = await Engine.loadWith(addonForBackend('cpu-graphs'), spec, { ...opts, backend: 'cpu-graphs', graphPolicy: 'decode-only', graphBatchBuckets: [2] });
    try {
      const prompts = [[3, 1, 4, 1, 5], [9, 2, 6, 5]];
      const blocks = [[0, 1, 2, 3], [4, 5, 6, 7]];
      const extra = (s: number): Partial<PlanSeq> => ({
        logprobs: 3 + s,
        logitBias: new Map([[7, 1.5]]),
        penalties: { presence: 0.4, frequency: 0.3, repetition: 1.2, seen: new Map(prompts[s]!.map((t, i) => [t, i % 2])) },
        sampling: { temperature: 0.9, seed: 17 + s, minP: 0.01 },
      });
      const run = async (engine: Engine): Promise<StepResult[]> => {
        const out = [await engine.step(buildStepPlan(prompts.map((p, s) => ({ tokenIds: p, numCached: 0, blockTable: blocks[s]! }))))];
        for (let i = 0; i < 5; i++) {
          const last = out.at(-1)!.tokenIds;
          const plan = buildStepPlan(prompts.map((p, s) => ({ tokenIds: [last[s]!], numCached: p.length + i, blockTable: blocks[s]!, ...extra(s) })));
          out.push(await engine.step(plan));
        }
        return out;
      };
      const strip = (r: StepResult[]) => r.map(({ stepTimeMs: _t, ...rest }) => rest);
      expect(strip(await run(graphed))).toEqual(strip(await run(eager)));
      expect(graphed.stats()).toMatchObject({ graphCaptures: 1, graphHits: 4, graphMisses: 1 });
      // A one-token chunk that asks prompt logprobs is decode-shaped, but runs eagerly.
      const chunk = buildStepPlan([0, 1].map((s) => ({ tokenIds: [5], numCached: 10, blockTable: blocks[s]!, sample: false, promptLogprobs: 1, nextPromptTokenId: 8 })));
      const a = await graphed.step(chunk);
      expect(graphed.stats().graphMisses).toBe(2);
      const b = await eager.step(chunk);
      expect(a.promptLogprobs).toEqual(b.promptLogprobs);
      expect(Array.from(a.promptLogprobs!.rowOffsets)).toEqual([0, 1, 2]);
    } finally {
      eager.close();
      graphed.close();
      await rm(dir, { recursive: true, force: true });
    }
  });
});
