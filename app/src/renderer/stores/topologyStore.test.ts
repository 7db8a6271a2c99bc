import { describe, expect, it } from 'vitest';
import { memoryStorage } from '../lib/persist.js';
import { createTopologyStore, TOPOLOGY_KEY } from './topologyStore.js';
import { defaultOptions } from './topologyDraft.js';

describe('topology store in browser storage', () => {
  it('a reload keeps the shape, placements and every option', async () => {
    const storage = memoryStorage();
    const a = createTopologyStore({ storage, saveDelayMs: 0 });
    a.getState().setChoice('custom', []);
    a.getState().setCustom('3A2F', []);
    a.getState().assign('ffn:0', { agentId: 'gpu-b', backend: 'cuda', deviceIndex: 1 });
    a.getState().setOptions({ modelDir: '/models/Qwen3-30B-A3B', graphBuckets: '1, 2, 4' });
    a.getState().setConfig('afd', { connector: 'nccl', dbo: { enabled: true, decodeTokenThreshold: 16, prefillTokenThreshold: 512, onSharedGpu: 'off' }, port: 31000, enableExpertParallel: true, epTransport: 'peer' });
    a.getState().setConfig('serving', { maxNumSeqs: 8 });
    a.getState().setOptions({ apiPort: Number.NaN }); // being typed
    a.getState().setConfig('afd', { stepDeadlineMs: Number.NaN }); // being typed
    await new Promise((r) => setTimeout(r, 5));
    const b = createTopologyStore({ storage }).getState();
    expect(b).toMatchObject({ choice: 'custom', custom: '3A2F', assignments: { 'ffn:0': { agentId: 'gpu-b', backend: 'cuda', deviceIndex: 1 } } });
    const afd = { ...defaultOptions.config.afd, connector: 'nccl', dbo: { enabled: true, decodeTokenThreshold: 16, prefillTokenThreshold: 512, onSharedGpu: 'off' }, port: 31000, enableExpertParallel: true, epTransport: 'peer' };
    expect(b.options).toEqual({
      ...defaultOptions,
      modelDir: '/models/Qwen3-30B-A3B',
      graphBuckets: '1, 2, 4',
      apiPort: defaultOptions.apiPort,
      config: { ...defaultOptions.config, afd, serving: { ...defaultOptions.config.serving, maxNumSeqs: 8 } },
    });
  });

  it('falls back per field on damaged values', () => {
    const storage = memoryStorage();
    const state = { choice: '9A9F', custom: '2A1F', replicas: 0, assignments: { 'ffn:0': { agentId: '', backend: 'tpu' }, 'attention:1': { agentId: 'a', backend: 'cpu', deviceIndex: 0 }, 'evil': {} }, options: { apiPort: 'x', config: { afd: { connector: 'carrier-pigeon', epTransport: 'nvlink', stepDeadlineMs: 900, dbo: { enabled: 'yes', decodeTokenThreshold: 8 }, bogus: 1 }, serving: { kvCacheMib: 64, kvMemoryFraction: 0.5 } } } };
    storage.setItem(TOPOLOGY_KEY, JSON.stringify({ state, version: 0 }));
    const s = createTopologyStore({ storage }).getState();
    expect(s).toMatchObject({ choice: '2A2F', custom: '2A1F', replicas: 1, assignments: { 'attention:1': { agentId: 'a', backend: 'cpu', deviceIndex: 0 } } });
    expect(Object.keys(s.assignments)).toEqual(['attention:1']);
    expect(s.options).toEqual({
      ...defaultOptions,
      config: {
        ...defaultOptions.config,
        afd: { ...defaultOptions.config.afd, stepDeadlineMs: 900, dbo: { ...defaultOptions.config.afd.dbo, decodeTokenThreshold: 8 } },
        // The pair the schema refuses together: the field it names keeps the default.
        serving: { ...defaultOptions.config.serving, kvCacheMib: 64 },
      },
    });
  });
});
