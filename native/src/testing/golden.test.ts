import { existsSync } from 'node:fs';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { defaultFixturesDir, goldenSkipReason, loadGoldenFixtures, relativeError } from './golden.js';
import { parseModelConfig } from '../checkpoint/config.js';
import { buildLoadSpec } from '../checkpoint/loadSpec.js';
import { tempDir, tinyQwen3MoeConfig, writeTestModel } from './checkpointTesting.js';

let dir: string;
beforeEach(async () => {
  dir = await tempDir();
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

function golden(name: string, vocab: number, o: Record<string, unknown> = {}) {
  return {
    format: 1,
    name,
    architecture: 'Qwen3MoeForCausalLM',
    relTolerance: 1e-3,
    maxNewTokens: 4,
    weightsDtype: 'bf16',
    computeDtype: 'float32',
    versions: { torch: '2.11.0' },
    cases: [{ promptIds: [1, 2, 3], greedyIds: [4, 5, 6, 7], logits: [{ step: 0, values: new Array(vocab).fill(0.5) }] }],
    ...o,
  };
}

describe('golden fixtures', () => {
  it('loads every fixture folder with its config, skipping folders without golden.json', async () => {
    const fx = join(dir, 'qwen3_moe');
    await mkdir(fx);
    await writeTestModel(fx, tinyQwen3MoeConfig());
    await writeFile(join(fx, 'golden.json'), JSON.stringify(golden('qwen3_moe', 64)));
    await mkdir(join(dir, 'not-a-fixture'));
    const fixtures = await loadGoldenFixtures(dir);
    expect(fixtures.map((f) => f.name)).toEqual(['qwen3_moe']);
    expect(fixtures[0]!.config.numExperts).toBe(6);
    expect(goldenSkipReason(fixtures, dir)).toBeNull();
  });

  it('rejects logits of the wrong length and greedy ids of the wrong count', async () => {
    const fx = join(dir, 'bad');
    await mkdir(fx);
    await writeTestModel(fx, tinyQwen3MoeConfig());
    await writeFile(join(fx, 'golden.json'), JSON.stringify(golden('bad', 63)));
    await expect(loadGoldenFixtures(dir)).rejects.toThrow(/63 logits, expected vocab_size 64/);
    await writeFile(join(fx, 'golden.json'), JSON.stringify(golden('bad', 64, { maxNewTokens: 5 })));
    await expect(loadGoldenFixtures(dir)).rejects.toThrow(/4 greedy ids, expected maxNewTokens 5/);
    const margins = (n: number) => golden('bad', 64, { cases: [{ ...golden('bad', 64).cases[0], routerRelativeMargins: new Array(n).fill(0.1) }] });
    await writeFile(join(fx, 'golden.json'), JSON.stringify(margins(5)));
    await expect(loadGoldenFixtures(dir)).rejects.toThrow(/5 router margins, expected one per position \(6\)/);
    await writeFile(join(fx, 'golden.json'), JSON.stringify(margins(6)));
    expect((await loadGoldenFixtures(dir))[0]!.golden.cases[0]!.routerRelativeMargins).toHaveLength(6);
  });

  it('returns no fixtures and a skip reason for an empty or missing folder', async () => {
    expect(await loadGoldenFixtures(join(dir, 'missing'))).toEqual([]);
    expect(goldenSkipReason([], dir)).toMatch(/no golden fixtures .*make_golden\.py/);
  });

  it('measures norm-wise relative error', () => {
    expect(relativeError([1, 2, 3], [1, 2, 3])).toBe(0);
    expect(relativeError([3, 0], [3, 4])).toBeCloseTo(4 / 5, 12);
    expect(() => relativeError([1], [1, 2])).toThrow(/lengths differ/);
  });
});

// The committed fixtures (tools/golden/fixtures) must parse and pass checkpoint validation.
const committed = await loadGoldenFixtures();
describe(`committed golden fixtures in ${defaultFixturesDir()}`, () => {
  const skipReason = goldenSkipReason(committed);
  if (skipReason) it.skip(skipReason, () => {});
  for (const f of committed) {
    it(`${f.name}: checkpoint validates for every role, greedy ids and logits in range`, async () => {
      for (const role of ['colocated', 'attention', 'ffn'] as const) await buildLoadSpec(f.dir, role);
      for (const c of f.golden.cases) for (const id of [...c.promptIds, ...c.greedyIds]) expect(id).toBeLessThan(f.config.vocabSize);
    });
    const hfConfig = join(f.dir, 'config.hf.json');
    it.skipIf(!existsSync(hfConfig))(`${f.name}: the config as transformers saved it parses to the same model`, async () => {
      const hf = parseModelConfig(hfConfig, JSON.parse(await readFile(hfConfig, 'utf8')));
      const pick = (c: typeof hf) => ({
        arch: c.arch,
        sizes: [c.vocabSize, c.hiddenSize, c.numLayers, c.numHeads, c.numKvHeads, c.headDim, c.intermediateSize],
        moe: [c.numExperts, c.numExpertsPerTok, c.moeIntermediateSize, c.normTopkProb, c.layers],
        rope: [c.ropeTheta, c.ropeScaling.type, c.ropeScaling.factor],
        tied: c.tieWordEmbeddings,
      });
      expect(pick(hf)).toEqual(pick(f.config));
    });
  }
});
