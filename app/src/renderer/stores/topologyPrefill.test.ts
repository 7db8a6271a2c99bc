/** Prefill ranks in the Topology draft: presets and the count beside xAyF, the launch spec, the draft checks, and a draft stored before prefill ranks. */
import { describe, expect, it } from 'vitest';
import { launchSpecSchema, type AgentInfo, type ModelInspectResult } from '@afd/shared';
import { fakeInventory } from '../../common/testing/fakeInventory.js';
import { memoryStorage } from '../lib/persist.js';
import { hostLoadWarnings, modelDirChecks } from './draftChecks.js';
import { inspectKey } from './inspectStore.js';
import { autoAssign, customPrefill, defaultOptions, draftTopologyText, evaluateDraft, shapeChoiceOf, shapeOf, type Draft } from './topologyDraft.js';
import { createTopologyStore, TOPOLOGY_KEY } from './topologyStore.js';

const GiB = 2 ** 30;
function agent(agentId: string, gpus: number): AgentInfo {
  return { agentId, url: `ws://${agentId}:7700`, state: 'connected', message: null, latencyMs: 1, topology: null, inventory: fakeInventory(agentId, 8, gpus) };
}
const draft = (patch: Partial<Draft> = {}): Draft => ({ choice: '1A1F', custom: '3A2F', replicas: 1, assignments: {}, options: { ...defaultOptions }, ...patch });
const placed = (d: Draft, agents: readonly AgentInfo[]): Draft => ({ ...d, assignments: autoAssign(d, agents) });

describe('prefill ranks in the topology draft', () => {
  it('a wPxAyF preset is an xAyF preset and a prefill count; the radio shows it back', () => {
    expect(shapeOf('2P1A1F')).toEqual({ choice: '1A1F', prefill: 2 });
    expect(shapeOf('2A2F')).toEqual({ choice: '2A2F', prefill: 0 });
    expect(shapeChoiceOf({ choice: '1A1F', prefill: 1 })).toBe('1P1A1F');
    expect(shapeChoiceOf({ choice: '1A1F', prefill: 0 })).toBe('1A1F');
    expect(shapeChoiceOf({ choice: '1A1F' })).toBe('1A1F');
    expect(shapeChoiceOf({ choice: '2A2F', prefill: 3 })).toBe('2A2F');
    expect(draftTopologyText({ choice: '2A2F', custom: '', prefill: 3 })).toBe('3P2A2F');
    expect(draftTopologyText({ choice: 'custom', custom: '3A2F', prefill: 2 })).toBe('2P3A2F');
    // A custom name with its own prefill ranks wins over the count.
    expect(customPrefill('2p3a2f')).toBe(2);
    expect(customPrefill('3A2F')).toBeNull();
    expect(draftTopologyText({ choice: 'custom', custom: '2P3A2F', prefill: 5 })).toBe('2P3A2F');
    expect(draftTopologyText({ choice: 'colocated', custom: '', prefill: 2 })).toBe('colocated');
  });

  it('builds a valid 1P1A1F launch spec: topology name, a placement row per prefill rank, role prefill', () => {
    const agents = [agent('c', 0)];
    const d = placed(draft({ prefill: 1 }), agents);
    expect(Object.keys(d.assignments).sort()).toEqual(['attention:0', 'ffn:0', 'prefill:0']);
    const ev = evaluateDraft(d, agents);
    expect(ev.problems).toEqual([]);
    expect(ev.ranks.map((r) => `${r.role}${r.rank}`)).toEqual(['ffn0', 'attention0', 'prefill0']);
    expect(ev.spec).toMatchObject({ mode: 'afd', topology: '1P1A1F' });
    expect(ev.spec?.placements).toContainEqual({ role: 'prefill', rank: 0, agentId: 'c', backend: 'cpu', deviceIndex: 0 });
    const spec = launchSpecSchema.parse(ev.spec);
    if (spec.mode !== 'afd') throw new Error('expected an AFD spec');
    expect(spec.topology).toMatchObject({ name: '1P1A1F', prefill: { ranks: 1 }, worldSize: 2 });
    expect(spec.afd.pd).toEqual({ port: 29700, minPromptTokens: 64, transport: 'auto' });
  });

  it('spreads 2P3A2F over the GPUs and names an unplaced prefill rank', () => {
    const agents = [agent('g', 8)];
    const d = placed(draft({ choice: 'custom', custom: '3A2F', prefill: 2 }), agents);
    const ev = evaluateDraft(d, agents);
    expect(ev.problems).toEqual([]);
    expect(ev.spec).toMatchObject({ topology: '2P3A2F' });
    expect(new Set(Object.values(d.assignments).map((a) => a.deviceIndex)).size).toBe(7);
    const missing = { ...d, assignments: { ...d.assignments } };
    delete missing.assignments['prefill:1'];
    expect(evaluateDraft(missing, agents).problems).toContain('prefill rank 1 has no device: pick one in its row');
  });

  it('refuses a prefill count that is not a whole number from 0 to 64', () => {
    expect(evaluateDraft(draft({ prefill: Number.NaN }), [agent('c', 0)]).problems[0]).toMatch(/prefill ranks must be a whole number from 0 to 64 \(got nothing\)/);
    expect(evaluateDraft(draft({ prefill: 1.5 }), [agent('c', 0)]).problems[0]).toMatch(/got 1.5/);
  });

  it('checks prefill ranks like whole-model ranks: colocated files and colocated weight bytes', () => {
    const result: ModelInspectResult = {
      dir: '/m',
      status: 'ready',
      reason: null,
      config: { architecture: 'Qwen3MoeForCausalLM', family: 'qwen3_moe', numLayers: 48, hiddenSize: 2048, numExperts: 128, numExpertsPerTok: 8, vocabSize: 151936, maxPositionEmbeddings: 40960, parameters: 30.5e9, roleBytes: { colocated: 61 * GiB, attention: 4 * GiB, ffn: 57 * GiB } },
      weights: { present: true, files: 16, bytes: 61 * GiB },
      tokenizer: { present: true, chatTemplate: true },
      roles: ['colocated', 'attention', 'ffn'],
    };
    const rank = { role: 'prefill' as const, rank: 0, agentId: 'g', backend: 'cuda' as const, deviceIndex: 0 };
    expect(modelDirChecks('/m', [rank], { [inspectKey('g', '/m')]: { state: 'done', result } }).problems).toEqual([]);
    const attentionOnly = { ...result, roles: ['attention' as const] };
    expect(modelDirChecks('/m', [rank], { [inspectKey('g', '/m')]: { state: 'done', result: attentionOnly } }).problems[0]).toMatch(/prefill ranks cannot run/);
    // An 80 GiB GPU: one prefill rank (61 GiB) fits, with an attention rank (4 GiB) too, with an FFN rank (57 GiB) not.
    const g = agent('g', 1);
    const agents = [{ ...g, inventory: { ...g.inventory!, devices: g.inventory!.devices.map((d) => ({ ...d, totalMemoryBytes: 80 * GiB })) } }];
    expect(hostLoadWarnings([rank, { ...rank, role: 'attention' }], agents, result)).toEqual([]);
    expect(hostLoadWarnings([rank, { ...rank, role: 'ffn' }], agents, result).join('\n')).toMatch(/cuda:0 need about 118 GiB/);
  });
});

describe('prefill ranks in the stored draft', () => {
  it('a draft stored before prefill ranks loads with none and keeps its placements', () => {
    const storage = memoryStorage();
    const state = { choice: '2A1F', custom: '3A2F', replicas: 1, assignments: { 'attention:1': { agentId: 'a', backend: 'cpu', deviceIndex: 0 } }, options: { modelDir: '/m', apiPort: 8000, graphBuckets: '1, 2', config: {} } };
    storage.setItem(TOPOLOGY_KEY, JSON.stringify({ state, version: 0 }));
    const s = createTopologyStore({ storage }).getState();
    expect(s).toMatchObject({ choice: '2A1F', prefill: 0, assignments: { 'attention:1': { agentId: 'a', backend: 'cpu', deviceIndex: 0 } }, options: { modelDir: '/m', apiPort: 8000 } });
    expect(s.options.config.afd.pd).toEqual(defaultOptions.config.afd.pd);
    expect(draftTopologyText(s)).toBe('2A1F');
  });

  it('a reload keeps the prefill ranks and their placements; a damaged count falls back to none', async () => {
    const storage = memoryStorage();
    const a = createTopologyStore({ storage, saveDelayMs: 0 });
    a.getState().setChoice('2P1A1F', []);
    a.getState().assign('prefill:1', { agentId: 'gpu-b', backend: 'cuda', deviceIndex: 3 });
    await new Promise((r) => setTimeout(r, 5));
    expect(createTopologyStore({ storage }).getState()).toMatchObject({ choice: '1A1F', prefill: 2, assignments: { 'prefill:1': { agentId: 'gpu-b', backend: 'cuda', deviceIndex: 3 } } });
    a.getState().setPrefill(Number.NaN, []); // being typed
    await new Promise((r) => setTimeout(r, 5));
    expect(createTopologyStore({ storage }).getState().prefill).toBe(0);
    a.getState().setChoice('4A2F', []);
    expect(a.getState().prefill).toBe(0);
    storage.setItem(TOPOLOGY_KEY, JSON.stringify({ state: { choice: '1A1F', prefill: -3 }, version: 0 }));
    expect(createTopologyStore({ storage }).getState().prefill).toBe(0);
  });
});
