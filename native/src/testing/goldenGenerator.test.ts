/**
 * The golden fixture generator's table against our checkpoint layer, without torch:
 * `make_golden.py --dry-run` writes each fixture's config.json and the tensor names and
 * shapes it would save (tensors.dry.json). Every config must parse, and the tensors must be
 * exactly the ones the family table expects (fused where the family stores them fused), so
 * a fixture generated later on a GPU host loads. For the hybrid (Gated DeltaNet) fixtures
 * the parsed layer kinds and gdn shapes are checked too. Skipped without python3.
 */
import { spawnSync } from 'node:child_process';
import { readFile, readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { parseModelConfig } from '../checkpoint/config.js';
import { familyRowOf } from '../checkpoint/families.js';
import { storedTensorPlans } from '../checkpoint/fusedExperts.js';
import { modelTensors } from '../checkpoint/tensorTables.js';
import { tempDir } from './checkpointTesting.js';

const script = fileURLToPath(new URL('../../../tools/golden/make_golden.py', import.meta.url));
const python = spawnSync('python3', ['--version'], { encoding: 'utf8' });
const hasPython = python.status === 0;
const out = hasPython ? await tempDir('afd-golden-dry-') : '';
afterAll(async () => {
  if (out) await rm(out, { recursive: true, force: true });
});

/** Runs the dry run once for every fixture; returns the fixture folders it wrote. */
async function dryRun(): Promise<string[]> {
  const run = spawnSync('python3', [script, '--dry-run', '--out', out], { encoding: 'utf8' });
  if (run.status !== 0) throw new Error(`make_golden.py --dry-run failed:\n${run.stdout}\n${run.stderr}`);
  return (await readdir(join(out, 'fixtures'))).sort();
}

const names = hasPython ? await dryRun() : [];

async function readFixture(name: string) {
  const dir = join(out, 'fixtures', name);
  const configPath = join(dir, 'config.json');
  const config = parseModelConfig(configPath, JSON.parse(await readFile(configPath, 'utf8')));
  const tensors = JSON.parse(await readFile(join(dir, 'tensors.dry.json'), 'utf8')) as [string, number[]][];
  return { config, tensors };
}

describe.runIf(hasPython)('make_golden.py fixture table (dry run) against the checkpoint layer', () => {
  it('writes the hybrid fixtures', () => {
    expect(names).toEqual(expect.arrayContaining(['qwen3_next_hybrid', 'qwen3_5_moe_hybrid']));
  });

  it.each(names)('%s: config parses and the tensors written are the ones the family table expects', async (name) => {
    const { config, tensors } = await readFixture(name);
    const expected = storedTensorPlans(familyRowOf(config), config, modelTensors(config)).map((t) => [t.name, t.shape]);
    const key = ([n, s]: readonly [string, readonly number[]] | [string, number[]]) => `${n} ${JSON.stringify(s)}`;
    expect(tensors.map(key).sort()).toEqual(expected.map((t) => key(t as [string, number[]])).sort());
  });

  it('qwen3_next_hybrid: linear x3 + full, layers 1 and 2 dense, grouped gdn projections, partial RoPE, tied', async () => {
    const { config: c } = await readFixture('qwen3_next_hybrid');
    expect(c.hfArchitecture).toBe('Qwen3NextForCausalLM');
    expect(c.layers.map((l) => l.attention)).toEqual(['gdn', 'gdn', 'gdn', 'gqa_gated']);
    expect(c.layers.map((l) => l.ffn)).toEqual(['moe+gated_shared', 'dense', 'dense', 'moe+gated_shared']);
    expect(c.gdn).toEqual({ numKeyHeads: 2, numValueHeads: 4, keyHeadDim: 16, valueHeadDim: 12, convKernel: 4, projLayout: 'grouped' });
    expect([c.hiddenSize, c.numHeads, c.numKvHeads, c.headDim, c.rotaryDim, c.intermediateSize]).toEqual([56, 4, 2, 16, 4, 72]);
    expect([c.numExperts, c.numExpertsPerTok, c.moeIntermediateSize, c.normTopkProb, c.gatedSharedExpert]).toEqual([5, 2, 20, true, { intermediateSize: 36 }]);
    expect([c.normUnitOffset, c.tieWordEmbeddings, c.qkNorm]).toEqual([true, true, true]);
  });

  it('qwen3_5_moe_hybrid: text_config with linear, linear, full, linear, split gdn projections, rope_parameters, vision ignored', async () => {
    const { config: c } = await readFixture('qwen3_5_moe_hybrid');
    expect(c.hfArchitecture).toBe('Qwen3_5MoeForConditionalGeneration');
    expect(c.layers.map((l) => l.attention)).toEqual(['gdn', 'gdn', 'gqa_gated', 'gdn']);
    expect(c.layers.every((l) => l.ffn === 'moe+gated_shared')).toBe(true);
    expect(c.gdn).toEqual({ numKeyHeads: 2, numValueHeads: 6, keyHeadDim: 12, valueHeadDim: 20, convKernel: 4, projLayout: 'split' });
    expect([c.hiddenSize, c.numHeads, c.numKvHeads, c.headDim, c.rotaryDim, c.ropeTheta]).toEqual([48, 3, 1, 20, 10, 10000]);
    expect([c.numExperts, c.numExpertsPerTok, c.moeIntermediateSize, c.normTopkProb, c.gatedSharedExpert]).toEqual([3, 2, 24, true, { intermediateSize: 28 }]);
    expect([c.normUnitOffset, c.tieWordEmbeddings, c.visionTowerIgnored]).toEqual([true, false, true]);
  });
});

if (!hasPython) {
  describe('make_golden.py fixture table', () => {
    it.skip('skipped: python3 is not on PATH', () => undefined);
  });
}
