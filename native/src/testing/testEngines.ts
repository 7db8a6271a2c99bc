/**
 * Test helper: the engines and model folders of one test file, closed and removed after
 * its tests (the call registers a vitest afterAll, so call it at the file's top level).
 */
import { rm } from 'node:fs/promises';
import { afterAll } from 'vitest';
import { Engine } from '../engine.js';

export interface TestEngines {
  /** Engine.load, closed after the file's tests. */
  load: (...args: Parameters<typeof Engine.load>) => Promise<Engine>;
  /** Folders to remove after the file's tests. */
  dirs: string[];
}

export function testEngines(): TestEngines {
  const engines: Engine[] = [];
  const dirs: string[] = [];
  afterAll(async () => {
    engines.forEach((e) => e.close());
    await Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true })));
  });
  return {
    load: async (...args) => {
      const e = await Engine.load(...args);
      engines.push(e);
      return e;
    },
    dirs,
  };
}
