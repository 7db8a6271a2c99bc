/**
 * Golden tests: the CPU engine against HuggingFace transformers (tools/golden/fixtures,
 * written by tools/golden/make_golden.py). For every fixture and case: greedy tokens
 * equal exactly, and logits at the recorded steps match by norm-wise relative error
 * below the fixture's tolerance (at most 1e-3). Also through the split roles. Hybrid
 * (Gated DeltaNet) fixtures run the same way: generateGreedy names state slot 0 on every
 * step of a model with gdn layers (engine.info.numStateSlots > 0), a new case at position
 * 0 starting it fresh.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { goldenSkipReason, loadGoldenFixtures, relativeError, repositoryModelsDir, type GoldenCase, type GoldenFixture } from './testing/golden.js';
import { Engine } from './engine.js';
import { generateGreedy } from './testing/engineTesting.js';

// AFD_GOLDEN_DIR points at another fixture folder (e.g. freshly generated ones). Shipped
// models with a golden.json (the demo model) are fixtures as well.
const root = process.env['AFD_GOLDEN_DIR'];
const fixtures = [...(await loadGoldenFixtures(root)), ...(root ? [] : await loadGoldenFixtures(repositoryModelsDir()))];
const skip = goldenSkipReason(fixtures, root);
const engines: Engine[] = [];
afterAll(() => engines.forEach((e) => e.close()));

const kvBlockSize = 16;
const numKvBlocks = 64;

async function checkCase(engine: Engine, f: GoldenFixture, c: GoldenCase, chunk?: number): Promise<void> {
  const blocksNeeded = Math.ceil((c.promptIds.length + f.golden.maxNewTokens) / kvBlockSize);
  const blocks = Array.from({ length: blocksNeeded }, (_, j) => (j * 5 + 3) % numKvBlocks);
  const out = await generateGreedy(engine, c.promptIds, f.golden.maxNewTokens, { blocks, ...(chunk ? { chunk } : {}) });
  expect(out.tokens).toEqual(c.greedyIds);
  const tol = Math.min(f.golden.relTolerance, 1e-3);
  for (const l of c.logits) expect(relativeError(out.logits[l.step]!, l.values), `step ${l.step}`).toBeLessThan(tol);
}

describe.runIf(skip === null)('golden fixtures (transformers reference)', () => {
  it.each(fixtures.map((f) => [f.name, f] as const))('%s: colocated greedy tokens and logits match', async (_name, f) => {
    const engine = await Engine.load(f.dir, { threads: 2, kvBlockSize, numKvBlocks });
    engines.push(engine);
    for (const c of f.golden.cases) await checkCase(engine, f, c);
    // Chunked prefill gives the same result.
    await checkCase(engine, f, f.golden.cases.at(-1)!, 3);
  });

  it.each(fixtures.filter((f) => f.config.numExperts > 0).map((f) => [f.name, f] as const))(
    '%s: attention + ffn roles (gate on attention) match too',
    async (_name, f) => {
      const opts = { threads: 2, kvBlockSize, numKvBlocks, computeGateOnAttention: true };
      const attention = await Engine.load(f.dir, { ...opts, role: 'attention' });
      const ffn = await Engine.load(f.dir, { ...opts, role: 'ffn' });
      engines.push(attention, ffn);
      attention.attachFfn(ffn);
      await checkCase(attention, f, f.golden.cases[0]!);
    },
  );
});

if (skip !== null) {
  describe('golden fixtures', () => {
    it.skip(`skipped: ${skip}`, () => undefined);
  });
}
