import { mkdir, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { buildLoadSpec } from '@afd/native/checkpoint';
import { defaultServedModelName, describeDefaultModel, ensureDefaultModel, ensureTinyModel, prepareDefaultModel, tinyModelDir } from './defaultModel.js';
import { demoModelName } from './demoModel.js';
import { makeModelVersion, markerFileName } from './makeModel.js';

let home: string;
beforeEach(async () => {
  home = await mkdtemp(join(tmpdir(), 'afd-home-'));
});
afterEach(async () => {
  await rm(home, { recursive: true, force: true });
});

/** Runs `fn` with AFD_DEMO_MODEL_DIR set to `value` ("none": no demo model), then restores it. */
async function withDemoModelDir<T>(value: string, fn: () => Promise<T>): Promise<T> {
  const saved = process.env['AFD_DEMO_MODEL_DIR'];
  process.env['AFD_DEMO_MODEL_DIR'] = value;
  try {
    return await fn();
  } finally {
    if (saved === undefined) delete process.env['AFD_DEMO_MODEL_DIR'];
    else process.env['AFD_DEMO_MODEL_DIR'] = saved;
  }
}

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

  it('makes it again when its marker names another generator version or recipe', async () => {
    const { dir } = await ensureTinyModel(home);
    const marker = join(dir, markerFileName);
    const current = JSON.parse(await readFile(marker, 'utf8')) as Record<string, unknown>;
    expect(current).toMatchObject({ version: makeModelVersion, arch: 'qwen3_moe', preset: 'tiny', seed: 0, configOnly: false });
    for (const stale of [{ version: makeModelVersion - 1 }, { version: makeModelVersion + 1 }, { seed: 7 }, { preset: 'other' }, { configOnly: true }]) {
      await writeFile(marker, JSON.stringify({ ...current, ...stale }));
      expect(await ensureTinyModel(home), JSON.stringify(stale)).toEqual({ dir, created: true });
      expect(JSON.parse(await readFile(marker, 'utf8'))).toEqual(current);
    }
  }, 300_000);

  it('concurrent callers in one process: one makes it, the others use it', async () => {
    const results = await Promise.all([ensureTinyModel(home), ensureTinyModel(home), ensureTinyModel(home)]);
    expect(new Set(results.map((r) => r.dir)).size).toBe(1);
    expect(results.filter((r) => r.created)).toHaveLength(1);
    await buildLoadSpec(results[0]!.dir, 'attention');
  }, 300_000);
});

describe('prepareDefaultModel', () => {
  it('says which tiny model it is and whether it was just made', async () => {
    await withDemoModelDir('none', async () => {
      const messages: string[] = [];
      const dir = await prepareDefaultModel((m) => messages.push(m), home);
      expect(dir).toBe(tinyModelDir(home));
      expect(await prepareDefaultModel((m) => messages.push(m), home)).toBe(dir);
      expect(messages).toEqual([
        `created the built-in tiny model with random weights in ${dir} (this install has no demo model)`,
        `using the built-in tiny model with random weights in ${dir} (this install has no demo model)`,
      ]);
    });
  }, 300_000);

  it('a failure says to pass --model', async () => {
    const file = join(home, 'not-a-folder');
    await writeFile(file, '');
    await withDemoModelDir('none', () =>
      expect(prepareDefaultModel(() => undefined, file)).rejects.toThrow(/^could not prepare the built-in model \(.+\); pass --model DIR with an HF checkpoint$/),
    );
  });
});

describe('ensureDefaultModel', () => {
  it('is the demo model where AFD_DEMO_MODEL_DIR points, served under its folder name and announced', async () => {
    const demo = join(home, 'demo', demoModelName);
    await mkdir(demo, { recursive: true });
    for (const f of ['config.json', 'tokenizer.json', 'tokenizer_config.json']) await writeFile(join(demo, f), '{}');
    await withDemoModelDir(demo, async () => {
      expect(await ensureDefaultModel(home)).toEqual({ dir: demo, created: false, kind: 'demo' });
      expect(defaultServedModelName()).toBe(demoModelName);
      const messages: string[] = [];
      expect(await prepareDefaultModel((m) => messages.push(m), home)).toBe(demo);
      expect(messages).toEqual([`using the demo model in ${demo}`]);
    });
    await withDemoModelDir('none', async () => expect(defaultServedModelName()).toBe('tiny-qwen3-moe'));
  });

  it('describeDefaultModel names what a launch without --model loads, without making it', async () => {
    const demo = join(home, 'demo', demoModelName);
    await mkdir(demo, { recursive: true });
    for (const f of ['config.json', 'tokenizer.json', 'tokenizer_config.json']) await writeFile(join(demo, f), '{}');
    await writeFile(join(demo, 'afd-model-info.json'), JSON.stringify({ description: 'demo model trained on English' }));
    const models = join(home, 'models');
    await withDemoModelDir(demo, async () => {
      expect(describeDefaultModel(models)).toEqual({ kind: 'demo', name: demoModelName, dir: demo, description: 'demo model trained on English' });
      expect((await ensureDefaultModel(home)).dir).toBe(describeDefaultModel(models).dir);
    });
    await withDemoModelDir('none', async () => {
      expect(describeDefaultModel(models)).toEqual({ kind: 'tiny', name: 'tiny-qwen3-moe', dir: tinyModelDir(home), description: null });
      await expect(stat(tinyModelDir(home))).rejects.toThrow(); // described, not made
    });
  });
});
