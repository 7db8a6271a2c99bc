import { describe, expect, it } from 'vitest';
import { rankConfigSchema } from './rankConfig.js';
import { mergeConfigInput, RankConfigError, resolveRankConfig } from './parse.js';
import { afdConfigSchema } from './afdConfig.js';
import { servingConfigSchema, kvCacheSizing, DEFAULT_KV_CACHE_MIB, DEFAULT_KV_MEMORY_FRACTION } from './servingConfig.js';
import { modelSourceSchema } from './modelSource.js';

describe('the rank config (one object, every default in its schemas)', () => {
  it('fills every section from {}: the sections are the section schemas\' own defaults', () => {
    const c = resolveRankConfig({});
    expect(c.afd).toEqual(afdConfigSchema.parse({}));
    expect(c.serving).toEqual(servingConfigSchema.parse({}));
    expect(c.model).toEqual(modelSourceSchema.parse({}));
    expect(c.device).toEqual({ backend: 'auto', index: 0, threads: 0 });
    expect(c.api).toEqual({ host: '127.0.0.1', port: 8000, allowedOrigins: [], allowedMethods: ['*'], allowedHeaders: ['*'], allowCredentials: false, toolCallParser: 'auto', routerPrefixAffinity: true });
    expect(c.serving).toEqual({ maxNumSeqs: 64, maxNumBatchedTokens: 2048, maxModelLen: null, maxQueuedRequests: 1024, kvCacheMib: null, kvMemoryFraction: null, kvBlockSize: 16, enablePrefixCaching: null, tokenizerWorkers: null });
    expect(c.model).toEqual({ dir: null, loadFormat: 'auto', seed: 0, servedModelName: null });
  });

  it('round-trips: the parsed config is valid input again (what a role process receives as JSON)', () => {
    const c = resolveRankConfig({ afd: { role: 'ffn', rank: 1, topology: '3A2F', connector: 'nccl', dbo: { enabled: true } }, serving: { maxNumSeqs: 8 }, device: { backend: 'cuda' } });
    expect(rankConfigSchema.parse(JSON.parse(JSON.stringify(c)))).toEqual(c);
    expect(c.afd.topology.name).toBe('3A2F');
  });

  it('names every bad field by its path from the root, and refuses unknown keys', () => {
    let caught: unknown;
    try {
      resolveRankConfig({ afd: { role: 'attention', topology: '2A1F', rank: 5 }, serving: { maxNumSeqs: 0 }, device: { gpu: 1 } });
    } catch (e) {
      caught = e;
    }
    expect(caught).toBeInstanceOf(RankConfigError);
    const paths = (caught as RankConfigError).issues.map((i) => i.path).sort();
    expect(paths).toEqual(['afd.rank', 'device.gpu', 'serving.maxNumSeqs']);
    expect(() => resolveRankConfig({ serving: { kvCacheMib: 8, kvMemoryFraction: 0.5 } })).toThrow(/serving\.kvMemoryFraction: give kvCacheMib or kvMemoryFraction, not both/);
  });
});

describe('the api section', () => {
  it('takes vLLM\'s CORS lists and refuses what is not a list of strings, naming the field', () => {
    const c = resolveRankConfig({ api: { allowedOrigins: ['https://app.example'], allowedMethods: ['GET', 'POST'], allowCredentials: true } });
    expect(c.api).toMatchObject({ allowedOrigins: ['https://app.example'], allowedMethods: ['GET', 'POST'], allowedHeaders: ['*'], allowCredentials: true });
    expect(() => resolveRankConfig({ api: { allowedOrigins: '*' } })).toThrow(/api\.allowedOrigins/);
    expect(() => resolveRankConfig({ api: { allowedHeaders: [''] } })).toThrow(/api\.allowedHeaders\[0\]/);
  });
});

describe('mergeConfigInput', () => {
  it('merges plain objects at any depth, replaces values, arrays and topologies, skips undefined', () => {
    const base = { afd: { dbo: { enabled: false, decodeTokenThreshold: 8 }, topology: { attention: { dp: 2 }, ffn: { dp: 1 } }, ffnHosts: ['a', 'b'] }, serving: { maxNumSeqs: 4 } };
    const over = { afd: { dbo: { enabled: true }, topology: '1A1F', ffnHosts: ['c'] }, serving: { maxNumSeqs: undefined }, model: { seed: undefined, loadFormat: 'dummy' } };
    expect(mergeConfigInput<Record<string, unknown>>(base, over)).toEqual({
      afd: { dbo: { enabled: true, decodeTokenThreshold: 8 }, topology: '1A1F', ffnHosts: ['c'] },
      serving: { maxNumSeqs: 4 },
      model: { loadFormat: 'dummy' },
    });
    // A nested object over nothing drops its undefined fields (they would override schema defaults otherwise).
    expect(mergeConfigInput<Record<string, unknown>>({}, { restart: { policy: undefined } })).toEqual({ restart: {} });
  });
});

describe('KV sizing from the serving config', () => {
  it('is a fixed budget when kvCacheMib is set; else a share of free memory on CUDA and a fixed default on the CPU', () => {
    const s = (input: object) => servingConfigSchema.parse(input);
    expect(kvCacheSizing(s({}), 'cpu')).toEqual({ kvCacheBytes: DEFAULT_KV_CACHE_MIB * 2 ** 20 });
    expect(kvCacheSizing(s({}), 'cuda')).toEqual({ kvCacheBytes: DEFAULT_KV_CACHE_MIB * 2 ** 20, kvMemoryFraction: DEFAULT_KV_MEMORY_FRACTION });
    expect(kvCacheSizing(s({ kvMemoryFraction: 0.5 }), 'cuda')).toEqual({ kvCacheBytes: DEFAULT_KV_CACHE_MIB * 2 ** 20, kvMemoryFraction: 0.5 });
    expect(kvCacheSizing(s({ kvCacheMib: 64 }), 'cuda')).toEqual({ kvCacheBytes: 64 * 2 ** 20 });
  });
});
