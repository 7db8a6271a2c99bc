import { describe, expect, it } from 'vitest';
import type { AgentInfo } from '@afd/shared';
import type { ModelInspectResult } from '@afd/shared';
import { autoAssign, defaultOptions, deviceSlots, evaluateDraft, parseBuckets, type Draft, type DraftConfig, type DraftOptions } from './topologyDraft.js';
import { inspectKey, type Inspection } from './inspectStore.js';
import { fakeInventory } from '../../common/testing/fakeInventory.js';

const GiB = 2 ** 30;
function inspected(patch: Partial<ModelInspectResult> = {}): Inspection {
  const result: ModelInspectResult = {
    dir: '/models/q',
    status: 'ready',
    reason: null,
    config: { architecture: 'Qwen3MoeForCausalLM', family: 'qwen3_moe', numLayers: 48, hiddenSize: 2048, numExperts: 128, numExpertsPerTok: 8, vocabSize: 151936, maxPositionEmbeddings: 40960, parameters: 30.5e9, roleBytes: { colocated: 61 * GiB, attention: 4 * GiB, ffn: 57 * GiB } },
    weights: { present: true, files: 16, bytes: 61 * GiB },
    tokenizer: { present: true, chatTemplate: true },
    roles: ['colocated', 'attention', 'ffn'],
    ...patch,
  };
  return { state: 'done', result };
}

function agent(agentId: string, gpus: number, state: AgentInfo['state'] = 'connected'): AgentInfo {
  return { agentId, url: `ws://${agentId}:7700`, state, message: null, latencyMs: 1, topology: null, inventory: fakeInventory(agentId, 8, gpus) };
}

const draft = (patch: Partial<Draft> = {}): Draft => ({ choice: '2A2F', custom: '3A2F', replicas: 1, assignments: {}, options: { ...defaultOptions }, ...patch });
/** defaultOptions with these fields of the config sections (what the screen's controls set). */
const withConfig = (config: { model?: Partial<DraftConfig['model']>; afd?: Partial<DraftConfig['afd']> }, rest: Partial<Omit<DraftOptions, 'config'>> = {}): DraftOptions => ({
  ...defaultOptions,
  ...rest,
  config: { ...defaultOptions.config, model: { ...defaultOptions.config.model, ...config.model }, afd: { ...defaultOptions.config.afd, ...config.afd } },
});

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
    const d = draft({ options: withConfig({ afd: { dbo: { ...defaultOptions.config.afd.dbo, enabled: true }, enableExpertParallel: true } }, { graphBuckets: '1, 8', modelDir: '/models/q' }) });
    d.assignments = autoAssign(d, agents);
    // Until the agent has answered about the model directory, the launch waits.
    expect(evaluateDraft(d, agents)).toMatchObject({ problems: [], pending: ['checking /models/q on agent g…'], spec: null });
    const ev = evaluateDraft(d, agents, { [inspectKey('g', '/models/q')]: inspected() });
    expect(ev.problems).toEqual([]);
    expect(ev.pending).toEqual([]);
    expect(ev.spec).toMatchObject({ mode: 'afd', topology: '2A2F', model: { dir: '/models/q' }, afd: { dbo: { enabled: true }, cudaGraph: { batchBuckets: [1, 8] }, enableExpertParallel: true } });
    expect(ev.ranks.map((r) => `${r.role}${r.rank}`)).toEqual(['ffn0', 'ffn1', 'attention0', 'attention1']);
  });

  it('carries the expert exchange (auto by default) and flags peer for FFN ranks on cpu', () => {
    const gpu = [agent('g', 4)];
    const ep = draft({ options: withConfig({ afd: { enableExpertParallel: true } }) });
    ep.assignments = autoAssign(ep, gpu);
    expect(defaultOptions.config.afd.epTransport).toBe('auto');
    expect(evaluateDraft(ep, gpu).spec).toMatchObject({ afd: { enableExpertParallel: true, epTransport: 'auto' } });
    ep.options = withConfig({ afd: { enableExpertParallel: true, epTransport: 'peer' } });
    expect(evaluateDraft(ep, gpu).spec).toMatchObject({ afd: { enableExpertParallel: true, epTransport: 'peer' } });
    const cpu = [agent('c', 0)];
    const onCpu = draft({ options: withConfig({ afd: { enableExpertParallel: true, epTransport: 'peer' } }) });
    onCpu.assignments = autoAssign(onCpu, cpu);
    expect(evaluateDraft(onCpu, cpu).problems.join('\n')).toMatch(/epTransport peer needs every FFN rank on a CUDA device/);
  });

  it('carries the load format and dummy seed into the spec, and flags a bad seed', () => {
    const agents = [agent('g', 4)];
    const d = draft({ choice: 'colocated', options: withConfig({ model: { loadFormat: 'dummy', seed: 11 } }, { modelDir: '/models/cfg' }) });
    d.assignments = autoAssign(d, agents);
    // The agent reported the directory as config only: with dummy weights that is enough.
    const ev = evaluateDraft(d, agents, { [inspectKey('g', '/models/cfg')]: inspected({ dir: '/models/cfg', status: 'config-only', reason: 'config only: needs load format dummy', weights: { present: false, files: 0, bytes: 0 } }) });
    expect(ev.problems).toEqual([]);
    expect(ev.spec).toMatchObject({ mode: 'colocated', model: { loadFormat: 'dummy', seed: 11 } });
    const bad = draft({ options: withConfig({ model: { loadFormat: 'dummy', seed: -2 } }) });
    bad.assignments = autoAssign(bad, agents);
    expect(evaluateDraft(bad, agents).problems.join('\n')).toMatch(/seed/);
  });

  it('carries the restart policy (never by default) into the spec', () => {
    const agents = [agent('g', 4)];
    const d = draft();
    d.assignments = autoAssign(d, agents);
    expect(evaluateDraft(d, agents).spec).toMatchObject({ restart: { policy: 'never' } });
    const on = draft({ options: { ...defaultOptions, config: { ...defaultOptions.config, restart: { ...defaultOptions.config.restart, policy: 'on-failure', maxRestarts: 3 } } } });
    on.assignments = autoAssign(on, agents);
    expect(evaluateDraft(on, agents).spec).toMatchObject({ restart: { policy: 'on-failure', maxRestarts: 3 } });
  });

  it('lists placement, connector, bucket and path problems before launch', () => {
    const agents = [agent('c', 0)];
    const d = draft({ options: withConfig({ afd: { connector: 'nccl' } }, { graphBuckets: '4, 2', modelDir: 'relative/dir' }) });
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
    const d = draft({ options: withConfig({ afd: { connector: 'peer' } }) });
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

  it('says how ranks that share a GPU run, and sends the GPU sharing options', () => {
    const agents = [agent('g', 1)];
    const d = draft();
    d.assignments = autoAssign(d, agents);
    const ev = evaluateDraft(d, agents);
    expect(ev.problems).toEqual([]);
    expect(ev.warnings[0]).toBe('ffn 0, ffn 1, attention 0, attention 1 share g cuda:0: they run at once under CUDA MPS (the agent starts or reuses its control daemon)');
    expect(ev.spec?.gpuSharing).toEqual({ mode: 'auto', smShare: {} });
    const sliced = evaluateDraft({ ...d, options: { ...d.options, config: { ...d.options.config, gpuSharing: { mode: 'time-slice', smShare: { ffn: 60 } } } } }, agents);
    expect(sliced.problems).toEqual(['gpuSharing.smShare: SM shares (role ffn) need MPS, but gpuSharing.mode is time-slice; use mode auto or mps, or drop the shares']);
    expect(sliced.warnings[0]).toMatch(/time-sliced \(GPU sharing time-slice\)/);
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

  it('refuses a model directory the agent refused or cannot serve yet, before launch', () => {
    const agents = [agent('g', 2)];
    const d = draft({ options: { ...defaultOptions, modelDir: '/models/does-not-exist' } });
    d.assignments = autoAssign(d, agents);
    const at = (i: Inspection) => evaluateDraft(d, agents, { [inspectKey('g', '/models/does-not-exist')]: i });
    const refused = at(inspected({ status: 'refused', reason: '/models/does-not-exist does not exist on this host', config: null, roles: [] }));
    expect(refused.problems).toEqual(['model directory on agent g: /models/does-not-exist does not exist on this host']);
    expect(refused.spec).toBeNull();
    const configOnly = at(inspected({ status: 'config-only', reason: 'config only: needs load format dummy (no *.safetensors weights in the directory)', weights: { present: false, files: 0, bytes: 0 } }));
    expect(configOnly.problems).toEqual(['model directory on agent g: config only: needs load format dummy (no *.safetensors weights in the directory); choose Weights: dummy to run it with random weights']);
    // With load format dummy the same directory launches: only its config (and tokenizer) is used.
    d.options = withConfig({ model: { loadFormat: 'dummy' } }, { modelDir: d.options.modelDir });
    const dummy = at(inspected({ status: 'config-only', reason: 'config only: needs load format dummy', weights: { present: false, files: 0, bytes: 0 } }));
    expect(dummy.problems).toEqual([]);
    expect(dummy.spec).toMatchObject({ model: { loadFormat: 'dummy', dir: '/models/does-not-exist' } });
    expect(at(inspected()).warnings).toContain('load format dummy: the safetensors in /models/does-not-exist on agent g are not loaded; every rank generates random weights');
    expect(at(inspected({ status: 'refused', reason: 'config.json: invalid config', config: null, roles: [] })).problems).toEqual(['model directory on agent g: config.json: invalid config (load format dummy still needs a valid config.json)']);
    d.options = withConfig({ model: { loadFormat: 'auto' } }, { modelDir: d.options.modelDir });
    const noTokenizer = at(inspected({ roles: ['ffn'], reason: 'no tokenizer (tokenizer.json and tokenizer_config.json): only FFN ranks can run from this directory', tokenizer: { present: false, chatTemplate: false } }));
    expect(noTokenizer.problems).toEqual(['attention ranks cannot run from /models/does-not-exist on agent g: no tokenizer (tokenizer.json and tokenizer_config.json): only FFN ranks can run from this directory']);
    expect(at({ state: 'failed', error: 'agent at ws://g:7700 is not connected' }).problems).toEqual(['cannot check /models/does-not-exist on agent g: agent at ws://g:7700 is not connected']);
  });

  it('warns when a placement oversubscribes a host: CPU ranks over cores, weights over memory', () => {
    const small = agent('laptop', 0);
    small.inventory!.cpu.cores = 2;
    small.inventory!.memory.totalBytes = 16 * GiB;
    const d = draft({ choice: 'custom', custom: '64A64F' });
    d.assignments = autoAssign(d, [small]);
    const ev = evaluateDraft(d, [small]);
    expect(ev.problems).toEqual([]);
    expect(ev.warnings).toContain('128 CPU ranks on agent laptop, which has 2 cores: the ranks would share cores and every step would be slow (use fewer ranks, or more agents)');
    const one = draft({ choice: '1A1F', options: { ...defaultOptions, modelDir: '/models/q' } });
    one.assignments = autoAssign(one, [small]);
    const big = evaluateDraft(one, [small], { [inspectKey('laptop', '/models/q')]: inspected() });
    expect(big.warnings).toContain('the CPU ranks on agent laptop need about 61.0 GiB of weights; the host has 16.0 GiB of memory');
    expect(big.warnings.some((w) => w.includes('which has 2 cores'))).toBe(false);
  });
});
