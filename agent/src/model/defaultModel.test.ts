import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { buildLoadSpec } from '@afd/native/checkpoint';
import { defaultModelDir, ensureDefaultModel } from './defaultModel.js';

let home: string;
beforeEach(async () => {
  home = await mkdtemp(join(tmpdir(), 'afd-home-'));
});
afterEach(async () => {
  await rm(home, { recursive: true, force: true });
});

describe('ensureDefaultModel', () => {
  it('creates the tiny Qwen3-MoE once, reuses it, and repairs a damaged copy', async () => {
    const first = await ensureDefaultModel(home);
    expect(first).toEqual({ dir: defaultModelDir(home), created: true });
    expect(first.dir).toBe(join(home, 'models', 'tiny-qwen3-moe'));
    const { spec, residentBytes } = await buildLoadSpec(first.dir, 'colocated');
    expect(spec.config).toMatchObject({ arch: 'qwen3_moe', vocabSize: 151936, hiddenSize: 256, numLayers: 4, numExperts: 8, numExpertsPerTok: 2, tieWordEmbeddings: true });
    expect(residentBytes).toBeGreaterThan(80e6);
    const mtime = (await stat(join(first.dir, 'model.safetensors'))).mtimeMs;
    expect(await ensureDefaultModel(home)).toEqual({ dir: first.dir, created: false });
    expect((await stat(join(first.dir, 'model.safetensors'))).mtimeMs).toBe(mtime);

    const weights = join(first.dir, 'model.safetensors');
    const bytes = await readFile(weights);
    await writeFile(weights, bytes.subarray(0, 1000));
    expect((await ensureDefaultModel(home)).created).toBe(true);
    expect((await readFile(weights)).equals(bytes)).toBe(true);
  }, 300_000);

  it('two concurrent callers both end with the same valid model', async () => {
    const [a, b] = await Promise.all([ensureDefaultModel(home), ensureDefaultModel(home)]);
    expect(a.dir).toBe(b.dir);
    await buildLoadSpec(a.dir, 'attention');
  }, 300_000);
});
