/**
 * Golden fixtures (HuggingFace transformers reference, tools/golden/fixtures) through the
 * AFD runtime: 2A1F over real loopback TCP in one process, the busy attention rank next
 * to an idle block peer (placeholder rows), the gate on either side for MoE models.
 * Greedy tokens equal the reference exactly; logits match within the fixture tolerance.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { goldenSkipReason, loadGoldenFixtures, relativeError, type GoldenFixture } from '../testing/golden.js';
import { buildLoadSpec } from '../checkpoint/loadSpec.js';
import { AttentionLink } from '../AttentionLink.js';
import { Engine } from '../engine.js';
import { FfnServer } from '../FfnServer.js';
import { generateGreedy } from '../testing/engineTesting.js';
import { testRankConfig } from '../testing/afdTesting.js';

const root = process.env['AFD_GOLDEN_DIR'];
const fixtures = await loadGoldenFixtures(root);
const skip = goldenSkipReason(fixtures, root);
const kvBlockSize = 16;
const numKvBlocks = 64;
const cleanup: (() => Promise<void> | void)[] = [];
afterAll(async () => {
  for (const f of cleanup.reverse()) await f();
});

const cases = fixtures.flatMap((f) => (f.config.numExperts > 0 ? [false, true] : [false]).map((gate) => [f.name, gate, f] as const));

describe.runIf(skip === null)('golden fixtures through the AFD runtime (2A1F, TCP)', () => {
  it.each(cases)('%s (gate on attention: %s)', { timeout: 120_000 }, async (_name, gate, f: GoldenFixture) => {
    const load = async (role: 'attention' | 'ffn'): Promise<Engine> => {
      const { spec } = await buildLoadSpec(f.dir, role, { computeGateOnAttention: gate });
      const e = await Engine.load(spec, { threads: 1, kvBlockSize, numKvBlocks });
      cleanup.push(() => e.close());
      return e;
    };
    const [a0, a1, ffn] = await Promise.all([load('attention'), load('attention'), load('ffn')]);
    const server = new FfnServer(ffn, testRankConfig('ffn', { topology: '2A1F', port: 0, stepDeadlineMs: 20_000 }));
    cleanup.push(() => server.stop());
    const basePort = server.listenPort();
    const links = [a0, a1].map((e, rank) => new AttentionLink(e, testRankConfig('attention', { topology: '2A1F', rank, port: basePort, stepDeadlineMs: 20_000 })));
    for (const l of links) cleanup.push(() => l.close({ shutdown: false }));
    // port 0 is only valid for a 1-FFN topology: the FFN rank took an ephemeral port.
    await Promise.all([server.start(), ...links.map((l) => l.connect())]);
    const tol = Math.min(f.golden.relTolerance, 1e-3);
    for (const c of f.golden.cases) {
      const blocks = Array.from({ length: Math.ceil((c.promptIds.length + f.golden.maxNewTokens) / kvBlockSize) }, (_, j) => (j * 5 + 3) % numKvBlocks);
      const out = await generateGreedy(a0, c.promptIds, f.golden.maxNewTokens, { blocks });
      expect(out.tokens).toEqual(c.greedyIds);
      for (const l of c.logits) expect(relativeError(out.logits[l.step]!, l.values), `step ${l.step}`).toBeLessThan(tol);
    }
    await expect.poll(() => links[1]!.state().emptySteps, { timeout: 15_000 }).toBeGreaterThan(0); // counted after its last receive
  });
});
