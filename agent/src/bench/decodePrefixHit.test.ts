/** `afd-bench decode --prefix-hit` on a real tiny CPU engine: valid plans, sensible timings, the cache's tokens. */
import { afterAll, describe, expect, it } from 'vitest';
import type { Engine } from '@afd/native';
import { KV_BLOCK, loadRoleEngine, type RigOptions } from './profile/rig.js';
import { formatPrefixHit, prefixHitRefusal, timePrefixHit } from './decodePrefixHit.js';

const o: RigOptions = { arch: 'qwen3_moe', preset: 'tiny', backend: 'cpu', threads: 1, device: 0, seed: 3, maxBatch: 3, maxTokensPerSeq: 80 };
let engine: Engine | undefined;
afterAll(() => engine?.close());

describe('timePrefixHit', () => {
  it('prefills the suffix over the cached context in one step, and samples what the cold prefill does', { timeout: 60_000 }, async () => {
    engine = await loadRoleEngine(o, 'colocated');
    const per = Math.ceil((o.maxTokensPerSeq + 1) / KV_BLOCK);
    const blocks = Array.from({ length: 3 }, (_, s) => Array.from({ length: per }, (_, j) => s * per + j));
    // context 60 + 9 new tokens; cold prefill in chunks of 50 tokens: 69 * 3 = 207 -> 5 steps.
    const rig = { engine, vocab: engine.info.vocabSize, blockSize: KV_BLOCK, blocks, context: 60, suffix: 9, prefillTokens: 50, repeats: 2 };
    const r = await timePrefixHit(rig, 3);
    expect(r).toMatchObject({ batch: 3, suffix: 9, context: 60, coldSteps: 5, sameTokens: true });
    expect(r.hitMs).toBeGreaterThan(0);
    expect(r.coldMs).toBeGreaterThan(r.hitMs);
    expect(r.ratio).toBeCloseTo(r.hitMs / r.coldMs, 9);
    expect(formatPrefixHit(r)).toContain('batch 3 x 9 new over 60 cached');
    // --profile-range hit: the last timed hit step alone, between a start and a stop (a no-op on the CPU).
    const calls: string[] = [];
    const step = engine.step.bind(engine);
    const profilerRange = engine.profilerRange.bind(engine);
    const spied = Object.assign(Object.create(engine) as Engine, {
      step: (plan: Parameters<Engine['step']>[0]) => (calls.push(`step ${plan.tokenIds.length}`), step(plan)),
      profilerRange: (start: boolean) => (calls.push(start ? 'start' : 'stop'), profilerRange(start)),
    });
    await timePrefixHit({ ...rig, engine: spied, repeats: 1, profileHit: true }, 3);
    expect(calls.slice(-4)).toEqual(['step 27', 'start', 'step 27', 'stop']);
    expect(calls.filter((c) => c === 'start')).toHaveLength(1);
  });

  it('refuses an engine whose model keeps recurrent state per sequence (linear-attention layers), naming the flag', async () => {
    const gdn = { info: { arch: 'qwen3_next', numStateSlots: 8 } } as unknown as Engine;
    const rig = { engine: gdn, vocab: 100, blockSize: KV_BLOCK, blocks: [[0]], context: 4, suffix: 2, prefillTokens: 8, repeats: 1 };
    await expect(timePrefixHit(rig, 1)).rejects.toThrow(/^--prefix-hit: qwen3_next has linear-attention \(gdn\) layers, whose per-sequence recurrent state KV blocks do not hold/);
    expect(prefixHitRefusal('qwen3_next/tiny')).toMatch(/leave --prefix-hit out$/);
  });
});

