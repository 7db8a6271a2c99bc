import { describe, expect, it } from 'vitest';
import type { AgentInfo } from '@afd/shared';
import { autoAssign, defaultOptions, deviceSlots, evaluateDraft, parseBuckets, type Draft } from './topologyDraft.js';

function agent(agentId: string, gpus: number, state: AgentInfo['state'] = 'connected'): AgentInfo {
  const lib = { loaded: false, soname: '', version: '', error: '' };
  return {
    agentId,
    url: `ws://${agentId}:7700`,
    state,
    message: null,
    latencyMs: 1,
    topology: null,
    inventory: {
      hostname: agentId,
      platform: 'linux',
      arch: 'x64',
      cpu: { model: 'cpu', cores: 8 },
      memory: { totalBytes: 1, freeBytes: 1 },
      devices: [
        { kind: 'cpu', index: 0, name: 'cpu', cores: 8, totalMemoryBytes: 1, freeMemoryBytes: 1 },
        ...Array.from({ length: gpus }, (_, i) => ({ kind: 'cuda' as const, index: i, name: 'H200', totalMemoryBytes: 1, freeMemoryBytes: 1, computeCapability: '9.0', multiProcessors: 132 })),
      ],
      backends: gpus > 0 ? ['cpu', 'cuda'] : ['cpu'],
      versions: { agent: '0', node: '20', addon: '0', addonVariant: 'cpu', cudaRuntime: null, cudaDriver: null },
      libraries: { cublas: lib, cublasLt: lib, nccl: lib },
      cudaError: '',
      models: [],
      advertiseHost: null,
    },
  };
}

const draft = (patch: Partial<Draft> = {}): Draft => ({ choice: '2A2F', custom: '3A2F', replicas: 1, assignments: {}, options: { ...defaultOptions }, ...patch });

describe('topology draft', () => {
  it('names the broken topology rule', () => {
    expect(evaluateDraft(draft({ choice: 'custom', custom: '1A2F' }), [agent('h', 0)]).problems[0]).toMatch(/attention-ge-ffn/);
    expect(evaluateDraft(draft({ choice: 'custom', custom: '2B' }), [agent('h', 0)]).problems[0]).toMatch(/topology-syntax/);
    expect(evaluateDraft(draft({ choice: 'colocated', replicas: 0 }), []).problems[0]).toMatch(/replicas/);
  });

  it('spreads ranks over GPUs of every agent, CPU when an agent has none', () => {
    const agents = [agent('g', 2), agent('c', 0), agent('down', 4, 'disconnected')];
    expect(deviceSlots(agents).map((s) => `${s.agentId}/${s.backend}:${s.deviceIndex}`)).toEqual(['g/cuda:0', 'g/cuda:1', 'c/cpu:0']);
    const a = autoAssign(draft({ choice: '4A2F' }), agents);
    expect(Object.keys(a)).toHaveLength(6);
    expect(a['ffn:0']).toEqual({ agentId: 'g', backend: 'cuda', deviceIndex: 0 });
    expect(a['ffn:1']).toEqual({ agentId: 'g', backend: 'cuda', deviceIndex: 1 });
    expect(a['attention:0']).toEqual({ agentId: 'c', backend: 'cpu', deviceIndex: 0 });
  });

  it('keeps a user choice and fills only new ranks', () => {
    const agents = [agent('g', 4)];
    const d = draft({ choice: '2A2F', assignments: { 'ffn:0': { agentId: 'g', backend: 'cuda', deviceIndex: 3 } } });
    const a = autoAssign(d, agents);
    expect(a['ffn:0']!.deviceIndex).toBe(3);
    expect(new Set(Object.values(a).map((x) => x.deviceIndex)).size).toBe(4);
  });

  it('builds a valid AFD launch spec with the options', () => {
    const agents = [agent('g', 4)];
    const d = draft({ options: { ...defaultOptions, dboEnabled: true, graphBuckets: '1, 8', modelDir: '/models/q' } });
    d.assignments = autoAssign(d, agents);
    const ev = evaluateDraft(d, agents);
    expect(ev.problems).toEqual([]);
    expect(ev.spec).toMatchObject({ mode: 'afd', topology: '2A2F', modelDir: '/models/q', afd: { dbo: { enabled: true }, cudaGraph: { batchBuckets: [1, 8] } } });
    expect(ev.ranks.map((r) => `${r.role}${r.rank}`)).toEqual(['ffn0', 'ffn1', 'attention0', 'attention1']);
  });

  it('carries the load format and dummy seed into the spec, and flags a bad seed', () => {
    const agents = [agent('g', 4)];
    const d = draft({ choice: 'colocated', options: { ...defaultOptions, modelDir: '/models/cfg', loadFormat: 'dummy', seed: 11 } });
    d.assignments = autoAssign(d, agents);
    const ev = evaluateDraft(d, agents);
    expect(ev.problems).toEqual([]);
    expect(ev.spec).toMatchObject({ mode: 'colocated', loadFormat: 'dummy', seed: 11 });
    const bad = draft({ options: { ...defaultOptions, loadFormat: 'dummy', seed: -2 } });
    bad.assignments = autoAssign(bad, agents);
    expect(evaluateDraft(bad, agents).problems.join('\n')).toMatch(/seed/);
  });

  it('lists placement, connector, bucket and path problems before launch', () => {
    const agents = [agent('c', 0)];
    const d = draft({ options: { ...defaultOptions, connector: 'nccl', graphBuckets: '4, 2', modelDir: 'relative/dir' } });
    d.assignments = { ...autoAssign(d, agents), 'ffn:1': { agentId: 'c', backend: 'cuda', deviceIndex: 0 } };
    const problems = evaluateDraft(d, agents).problems.join('\n');
    expect(problems).toMatch(/ffn rank 1 asks for CUDA on agent "c", which has no CUDA device/);
    expect(problems).toMatch(/connector nccl needs every rank on a CUDA device/);
    expect(problems).toMatch(/strictly ascending/);
    expect(problems).toMatch(/must be an absolute path/);
    expect(evaluateDraft(d, agents).spec).toBeNull();
  });

  it('takes connector peer on the GPUs of one host and refuses it across hosts', () => {
    const one = [agent('g', 4)];
    const d = draft({ options: { ...defaultOptions, connector: 'peer' } });
    d.assignments = autoAssign(d, one);
    const ev = evaluateDraft(d, one);
    expect(ev.problems).toEqual([]);
    expect(ev.spec).toMatchObject({ mode: 'afd', afd: { connector: 'peer' } });
    const two = [agent('g', 2), agent('h', 2)];
    d.assignments = { ...autoAssign(d, two), 'ffn:0': { agentId: 'g', backend: 'cuda', deviceIndex: 0 }, 'attention:0': { agentId: 'h', backend: 'cuda', deviceIndex: 0 } };
    expect(evaluateDraft(d, two).problems.join('\n')).toMatch(/connector peer \(CUDA IPC\) needs every rank on one host/);
  });

  it('needs a connected agent and a device for every rank', () => {
    expect(evaluateDraft(draft(), []).problems).toContain('no agent is connected: add one on the Agents screen');
    expect(evaluateDraft(draft(), [agent('c', 0)]).problems.join()).toMatch(/ffn rank 0 has no device/);
  });

  it('warns when ranks share a GPU', () => {
    const agents = [agent('g', 1)];
    const d = draft();
    d.assignments = autoAssign(d, agents);
    const ev = evaluateDraft(d, agents);
    expect(ev.problems).toEqual([]);
    expect(ev.warnings[0]).toMatch(/share g cuda:0/);
  });

  it('builds a colocated spec', () => {
    const agents = [agent('c', 0)];
    const d = draft({ choice: 'colocated', replicas: 2 });
    d.assignments = autoAssign(d, agents);
    expect(evaluateDraft(d, agents).spec).toMatchObject({ mode: 'colocated', placements: [{ role: 'colocated', rank: 0 }, { role: 'colocated', rank: 1 }] });
  });

  it('parseBuckets', () => {
    expect(parseBuckets('1 2, 4')).toEqual({ ok: true, value: [1, 2, 4] });
    expect(parseBuckets('')).toMatchObject({ ok: false });
    expect(parseBuckets('1, x')).toMatchObject({ ok: false, error: expect.stringMatching(/"x" is not a positive whole number/) });
  });
});
