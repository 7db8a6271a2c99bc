import { mkdir, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { buildLoadSpec } from '@afd/native/checkpoint';
import { defaultServedModelName, ensureDefaultModel, ensureTinyModel, tinyModelDir } from './defaultModel.js';
import { demoModelName } from './demoModel.js';

let home: string;
beforeEach(async () => {
  home = await mkdtemp(join(tmpdir(), 'afd-home-'));
});
afterEach(async () => {
  await rm(home, { recursive: true, force: true });
});

describe('ensureTinyModel', () => {
  it('creates the tiny Qwen3-MoE once, reuses it, and repairs a damaged copy', async () => {
    const first = await ensureTinyModel(home);
    expect(first).toEqual({ dir: tinyModelDir(home), created: true });
    expect(first.dir).toBe(join(home, 'models', 'tiny-qwen3-moe'));
    const { spec, residentBytes } = await buildLoadSpec(first.dir, 'colocated');
    expect(spec.config).toMatchObject({ arch: 'qwen3_moe', vocabSize: 151936, hiddenSize: 256, numLayers: 4, numExperts: 8, numExpertsPerTok: 2, tieWordEmbeddings: true });
    expect(residentBytes).toBeGreaterThan(80e6);
    const mtime = (await stat(join(first.dir, 'model.safetensors'))).mtimeMs;
    expect(await ensureTinyModel(home)).toEqual({ dir: first.dir, created: false });
    expect((await stat(join(first.dir, 'model.safetensors'))).mtimeMs).toBe(mtime);

    const weights = join(first.dir, 'model.safetensors');
    const bytes = await readFile(weights);
    await writeFile(weights, bytes.subarray(0, 1000));
    expect((await ensureTinyModel(home)).created).toBe(true);
    expect((await readFile(weights)).equals(bytes)).toBe(true);
  }, 300_000);

  it('two concurrent callers both end with the same valid model', async () => {
    const [a, b] = await Promise.all([ensureTinyModel(home), ensureTinyModel(home)]);
    expect(a.dir).toBe(b.dir);
    await buildLoadSpec(a.dir, 'attention');
  }, 300_000);
});

describe('ensureDefaultModel', () => {
  it('is the demo model where AFD_DEMO_MODEL_DIR points, served under its folder name', async () => {
    const demo = join(home, 'demo', demoModelName);
    await mkdir(demo, { recursive: true });
    for (const f of ['config.json', 'tokenizer.json', 'tokenizer_config.json']) await writeFile(join(demo, f), '{}');
    const saved = process.env['AFD_DEMO_MODEL_DIR'];
    process.env['AFD_DEMO_MODEL_DIR'] = demo;
    try {
      expect(await ensureDefaultModel(home)).toEqual({ dir: demo, created: false, kind: 'demo' });
      expect(defaultServedModelName()).toBe(demoModelName);
      process.env['AFD_DEMO_MODEL_DIR'] = 'none';
      expect(defaultServedModelName()).toBe('tiny-qwen3-moe');
    } finally {
      if (saved === undefined) delete process.env['AFD_DEMO_MODEL_DIR'];
      else process.env['AFD_DEMO_MODEL_DIR'] = saved;
    }
  });
});
