import { rm } from 'node:fs/promises';
import { afterAll, describe, expect, it } from 'vitest';
import { Engine } from './engine.js';
import { relErr } from './testing/engineReference.js';
import { roleSpec, tinyConfigs, writeTinyModel } from './testing/engineTesting.js';
import { runPrefixReuse } from './testing/prefixReuse.js';

const dirs: string[] = [];
afterAll(async () => Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true }))));

describe.each(Object.keys(tinyConfigs))('a reused KV prefix (prefix caching, n samples): %s', (arch) => {
  it('a sequence starting from another one\'s full blocks generates the same tokens and logits (CPU, 1e-5)', async () => {
    const dir = await writeTinyModel(arch, 5);
    dirs.push(dir);
    const engine = await Engine.load(await roleSpec(dir, 'colocated'), { threads: 2, kvBlockSize: 4, numKvBlocks: 31 });
    try {
      const run = await runPrefixReuse(engine, [3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9], 4);
      expect(run.reusedTokens).toBe(12);
      expect(run.reused.tokens).toEqual(run.whole.tokens);
      for (let i = 0; i < run.whole.logits.length; i++) expect(relErr(run.reused.logits[i]!, run.whole.logits[i]!)).toBeLessThan(1e-5);
    } finally {
      engine.close();
    }
  });
});
