import { describe, expect, it } from 'vitest';
import { CPU_PROFILE_TEXT } from '../testing/planProfile.js';
import { createPlanStore } from './planStore.js';
import { createTopologyStore } from './topologyStore.js';
import type { PlanOutcome, PlanRequest } from '../plan/planRequest.js';
import { inlineRunner } from '../plan/planRunner.js';
import { createFakeBridge } from '../testing/fakeBridge.js';
import { memoryStorage } from '../lib/persist.js';

const text = CPU_PROFILE_TEXT;
const settle = () => new Promise((r) => setTimeout(r, 0));

describe('plan store', () => {
  it('a profile loads and plans; inputs re-plan', async () => {
    const s = createPlanStore();
    expect(s.getState().loadProfile('prof.json', text)).toBe(true);
    await settle();
    expect(s.getState().profile?.source).toBe('prof.json');
    expect(s.getState().result?.rows[0]?.kind).toBe('colocated');
    s.getState().setInputs({ tpotMs: 0.001 });
    await settle();
    expect(s.getState().result?.rows).toEqual([]);
    expect(s.getState().result?.reason).toMatch(/^nothing meets TPOT/);
    s.getState().setInputs({ gpus: 0 });
    await settle();
    expect(s.getState().error).toMatch(/^GPUs/);
    expect(s.getState().result).toBeNull();
  });

  it('a bad file says why and keeps the profile loaded before it', async () => {
    const s = createPlanStore();
    s.getState().loadProfile('good.json', text);
    expect(s.getState().loadProfile('bad.json', '{"version": 1, "oops": true')).toBe(false);
    expect(s.getState().profileError).toMatch(/^bad\.json: not JSON/);
    expect(s.getState().loadProfile('old.json', '{"version": 0}')).toBe(false);
    expect(s.getState().profileError).toMatch(/profile version 0 is not supported/);
    expect(s.getState().profile?.source).toBe('good.json');
    s.getState().loadProfile('good.json', text);
    expect(s.getState().profileError).toBeNull();
  });

  it('a result that arrives after a newer run is dropped', async () => {
    const pending: { req: PlanRequest; resolve: (o: PlanOutcome) => void }[] = [];
    const s = createPlanStore({ runner: (req) => new Promise((resolve) => pending.push({ req, resolve })) });
    s.getState().loadProfile('p.json', text);
    s.getState().setInputs({ gpus: 8 });
    expect(pending.map((p) => p.req.kind === 'single' && p.req.job.query.gpus)).toEqual([4, 8]);
    expect(s.getState().running).toBe(true);
    pending[1]!.resolve(await inlineRunner(pending[1]!.req));
    await settle();
    pending[0]!.resolve({ kind: 'single', result: { rows: [], dropped: [], reason: 'stale', useAfd: false } });
    await settle();
    expect(s.getState().result?.reason).not.toBe('stale');
    expect(s.getState().running).toBe(false);
  });

  it('Use fills the Topology draft: shape, custom text, DBO, replicas', async () => {
    const s = createPlanStore();
    s.getState().loadProfile('p.json', text);
    await settle();
    const topo = createTopologyStore();
    const afd = s.getState().result!.rows.find((r) => r.kind === 'afd' && r.stages === 2)!;
    s.getState().applyRow(afd, topo, []);
    expect(topo.getState().choice).toBe('custom');
    expect(topo.getState().custom).toBe(afd.topology);
    expect(topo.getState().options.config.afd.dbo.enabled).toBe(true);
    expect(s.getState().applied).toMatchObject({ topology: afd.topology, note: expect.stringContaining('From the Plan screen') });
    s.getState().applyRow({ ...afd, topology: '2A1F', stages: 1 }, topo, []);
    expect(topo.getState().choice).toBe('2A1F');
    expect(topo.getState().options.config.afd.dbo.enabled).toBe(false);
    s.getState().applyRow(s.getState().result!.rows[0]!, topo, []);
    expect(topo.getState()).toMatchObject({ choice: 'colocated', replicas: 4 });
    expect(s.getState().applied?.topology).toBe('colocated:4');
  });
});

describe('plan store: profiles on an agent', () => {
  it('lists them through the bridge; one loads like a file', async () => {
    const bridge = createFakeBridge();
    bridge.handle('plan.profiles', () => ({ profiles: [{ name: 'cpu.json', path: '/repo/docs/planner/cpu.json', origin: 'repo', text }], skipped: [{ path: '/h/profiles/big.json', reason: 'too big' }] }));
    const s = createPlanStore({ bridge });
    const listing = s.getState().listAgentProfiles('a1');
    expect(s.getState().agentProfiles).toEqual({ agentId: 'a1', state: 'listing' });
    await listing;
    expect(bridge.calls).toEqual([{ channel: 'plan.profiles', request: { agentId: 'a1' } }]);
    const ap = s.getState().agentProfiles;
    if (ap?.state !== 'done') throw new Error('not listed');
    expect(ap.result.skipped).toHaveLength(1);
    expect(s.getState().loadProfile(`a1: ${ap.result.profiles[0]!.name}`, ap.result.profiles[0]!.text)).toBe(true);
    expect(s.getState().profile?.source).toBe('a1: cpu.json');
  });

  it('an agent that cannot answer says why', async () => {
    const bridge = createFakeBridge();
    bridge.handle('plan.profiles', () => {
      throw new Error('agent a2 is not connected');
    });
    const s = createPlanStore({ bridge });
    await s.getState().listAgentProfiles('a2');
    expect(s.getState().agentProfiles).toEqual({ agentId: 'a2', state: 'failed', error: 'agent a2 is not connected' });
  });
});

describe('plan store across a reload', () => {
  it('the inputs and the last profile come back, and the plan is run again at once', async () => {
    const storage = memoryStorage();
    const before = createPlanStore({ storage });
    before.getState().loadProfile('prof.json', text);
    before.getState().setInputs({ gpus: 8, tpotMs: 35, gpuMemGib: NaN, stages: '1,2' });
    await settle();
    const after = createPlanStore({ storage });
    expect(after.getState().inputs).toMatchObject({ gpus: 8, tpotMs: 35, stages: '1,2', link: 'profile:tcp' });
    expect(after.getState().inputs.gpuMemGib).toBeNaN();
    expect(after.getState().profile?.source).toBe('prof.json');
    await settle();
    expect(after.getState().result?.rows[0]?.gpusUsed).toBeLessThanOrEqual(8);
    after.getState().setInputs({ gpuMemGib: 24 });
    expect(createPlanStore({ storage }).getState().inputs.gpuMemGib).toBe(24);
  });

  it('a stale or hand-edited value falls back to the defaults; a refused file is not remembered', () => {
    const storage = memoryStorage();
    storage.setItem('afd.console.planInputs', '{"gpus":"lots"}');
    storage.setItem('afd.console.planProfile', '{"source":"x.json","text":"{}"}');
    const s = createPlanStore({ storage });
    expect(s.getState().inputs.gpus).toBe(4);
    expect(s.getState().profile).toBeNull();
    expect(s.getState().loadProfile('broken.json', 'not json')).toBe(false);
    expect(storage.getItem('afd.console.planProfile')).toBe('{"source":"x.json","text":"{}"}');
  });

  it('without storage nothing is kept', () => {
    const s = createPlanStore({ storage: null });
    s.getState().setInputs({ gpus: 16 });
    expect(createPlanStore({ storage: null }).getState().inputs.gpus).toBe(4);
  });
});

describe('plan store: which inputs a result is for', () => {
  it('the result keeps the GPU count it was planned for until the next one arrives', async () => {
    const pending: { req: PlanRequest; resolve: (o: PlanOutcome) => void }[] = [];
    const s = createPlanStore({ storage: null, runner: (req) => new Promise((resolve) => pending.push({ req, resolve })) });
    s.getState().loadProfile('p.json', text);
    pending[0]!.resolve(await inlineRunner(pending[0]!.req));
    await settle();
    expect(s.getState().resultInputs?.gpus).toBe(4);
    s.getState().setInputs({ gpus: 8 });
    expect(s.getState().inputs.gpus).toBe(8);
    expect(s.getState().resultInputs?.gpus).toBe(4); // the table still shows the 4-GPU plan, as such
    pending[1]!.resolve(await inlineRunner(pending[1]!.req));
    await settle();
    expect(s.getState().resultInputs?.gpus).toBe(8);
  });
});

describe('plan store: a mixed cluster', () => {
  const rows = [
    { card: 'h200', gpus: 2, price: 3, costs: 'roofline' as const },
    { card: 'h100', gpus: 2, price: 2, costs: 'roofline' as const },
  ];

  it('two kinds send a mixed request (no profile needed); back to one kind, the single plan again', async () => {
    const sent: PlanRequest[] = [];
    const s = createPlanStore({ storage: null, runner: (req) => (sent.push(req), inlineRunner(req)) });
    s.getState().setInputs({ link: 'nvlink4' });
    s.getState().setMixed({ rows });
    await settle();
    expect(sent.map((r) => r.kind)).toEqual(['mixed']);
    const req = sent[0]!;
    if (req.kind !== 'mixed') throw new Error('not mixed');
    expect(req.job.kinds).toEqual([{ card: 'h200', gpus: 2, price: 3 }, { card: 'h100', gpus: 2, price: 2 }]);
    expect(s.getState().mixedResult?.rows.length).toBeGreaterThan(0);
    expect(s.getState().mixedResult?.cards.map((c) => c.card)).toEqual(['h200', 'h100']);
    expect(s.getState().result).toBeNull();
    // A profile loaded keeps the preset picked; its measured connector is refused for a mixed cluster.
    s.getState().loadProfile('p.json', text);
    await settle();
    expect(sent.at(-1)?.kind).toBe('mixed');
    expect(s.getState().inputs.link).toBe('nvlink4');
    s.getState().setInputs({ link: 'profile:tcp' });
    await settle();
    expect(s.getState().error).toMatch(/^Link: a mixed cluster needs a link preset/);
    expect(s.getState().mixedResult).toBeNull();
    s.getState().setMixed({ rows: rows.slice(0, 1) });
    await settle();
    expect(sent.at(-1)?.kind).toBe('single');
    expect(s.getState().result?.rows.length).toBeGreaterThan(0);
    expect(s.getState().mixedResult).toBeNull();
  });

  it('Use on a candidate fills the Topology draft; one that cannot launch leaves it', async () => {
    const s = createPlanStore({ storage: null });
    s.getState().setInputs({ link: 'nvlink4' });
    s.getState().setMixed({ rows });
    await settle();
    const afd = s.getState().mixedResult!.rows.find((r) => r.kind === 'afd')!;
    const topo = createTopologyStore();
    s.getState().applyMixedRow(afd, topo, []);
    expect(topo.getState().choice === 'custom' ? topo.getState().custom : topo.getState().choice).toBe(afd.topology);
    expect(s.getState().applied?.note).toContain(`assign ${afd.attentionCard} GPUs to the attention ranks`);
    const before = s.getState().applied;
    s.getState().applyMixedRow({ ...afd, kind: 'colocated', gpus: { h200: { afd: 0, colocated: 2, idle: 0 }, h100: { afd: 0, colocated: 2, idle: 0 } } }, topo, []);
    expect(s.getState().applied).toBe(before);
  });

  it('the rows and model survive a reload and are planned at once; bad stored rows fall back to none', async () => {
    const storage = memoryStorage();
    const before = createPlanStore({ storage });
    before.getState().setInputs({ link: 'ib400' });
    before.getState().setMixed({ rows: [...rows, { card: 'a100', gpus: NaN, price: NaN, costs: 'profile' }], model: 'deepseek_v3/deepseek-v3' });
    const after = createPlanStore({ storage });
    expect(after.getState().mixed.model).toBe('deepseek_v3/deepseek-v3');
    expect(after.getState().mixed.rows.slice(0, 2)).toEqual(rows);
    expect(after.getState().mixed.rows[2]).toMatchObject({ card: 'a100', costs: 'profile' });
    expect(after.getState().mixed.rows[2]!.gpus).toBeNaN();
    await settle();
    // Planned at once: the empty GPUs field of a100 is the first problem.
    expect(after.getState().error).toMatch(/^Card kind 3 \(a100\): GPUs/);
    storage.setItem('afd.console.planMixed', '{"rows":[{"card":"h200","gpus":2,"price":null,"costs":"magic"}],"model":"m"}');
    expect(createPlanStore({ storage }).getState().mixed).toEqual({ rows: [], model: 'qwen3_moe/qwen3-30b-a3b' });
  });
});
