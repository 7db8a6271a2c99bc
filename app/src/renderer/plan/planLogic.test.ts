import { describe, expect, it } from 'vitest';
import { CPU_PROFILE_TEXT } from '../testing/planProfile.js';
import { parseCostProfile, type PlanRow } from '@afd/shared';
import { defaultLink, defaultPlanInputs, draftFromRow, linkChoices, notLaunchable, planJob, profileCurves, rowLabel, runPlanJob } from './planLogic.js';

const profile = parseCostProfile(CPU_PROFILE_TEXT);
// Cast: fields the planner may add later are not read here.
const row = (o: Partial<PlanRow>): PlanRow => ({ kind: 'afd', topology: '3A1F', attention: 3, ffn: 1, stages: 1, replicas: 1, gpusUsed: 4, batchPerRank: 16, tpotMs: 33.06, tokensPerS: 1452, tokensPerSPerGpu: 363, ffnBusy: 0.16, ...o }) as PlanRow;

describe('plan inputs', () => {
  it('checks every field into a query, naming the first bad one', () => {
    const ok = planJob(profile, { ...defaultPlanInputs, stages: '1, 2,2 4' });
    expect(ok).toEqual({ ok: true, job: { profile, link: 'profile:tcp', query: { gpus: 4, tpotMs: 40, context: 256, maxBatch: 256, stageCounts: [1, 2, 4] } } });
    expect(planJob(profile, { ...defaultPlanInputs, gpus: 0 })).toEqual({ ok: false, error: 'GPUs must be a whole number from 1 to 256' });
    expect(planJob(profile, { ...defaultPlanInputs, gpus: NaN })).toMatchObject({ ok: false });
    expect(planJob(profile, { ...defaultPlanInputs, tpotMs: -1 })).toEqual({ ok: false, error: 'TPOT target must be a number of milliseconds above 0' });
    expect(planJob(profile, { ...defaultPlanInputs, stages: '1,x' })).toMatchObject({ ok: false, error: expect.stringContaining('Micro-batches') });
    expect(planJob(profile, { ...defaultPlanInputs, link: 'profile:nccl' })).toMatchObject({ ok: false, error: expect.stringContaining('no nccl connector') });
    expect(planJob(profile, { ...defaultPlanInputs, link: 'carrier-pigeon' })).toMatchObject({ ok: false });
  });

  it('offers the measured connectors first, then the presets', () => {
    const values = linkChoices(profile).map((c) => c.value);
    expect(values[0]).toBe('profile:tcp');
    expect(values).toContain('nvlink4');
    expect(linkChoices(null)[0]!.value).toBe('nvlink4');
    expect(defaultLink(profile, 'ib400')).toBe('ib400');
    expect(defaultLink({ ...profile, connectors: [] }, 'profile:tcp')).toBe('nvlink4');
  });
});

describe('the planner on the repository CPU profile', () => {
  it('4 GPUs at TPOT 40 ms: colocated wins, AFD rows follow (docs/planner.md)', () => {
    const c = planJob(profile, defaultPlanInputs);
    if (!c.ok) throw new Error(c.error);
    const r = runPlanJob(c.job);
    expect(r.useAfd).toBe(false);
    expect(r.reason).toMatch(/^do not use AFD here: 4 colocated replicas/);
    expect(r.rows[0]!.kind).toBe('colocated');
    expect(r.rows.some((x) => x.kind === 'afd')).toBe(true);
  });

  it('a preset link runs too', () => {
    const c = planJob(profile, { ...defaultPlanInputs, link: 'nvlink4' });
    if (!c.ok) throw new Error(c.error);
    expect(runPlanJob(c.job).rows.length).toBeGreaterThan(0);
  });
});

describe('a row into the Topology draft', () => {
  it('a preset shape picks the preset; DBO follows the micro-batches', () => {
    expect(draftFromRow(row({ topology: '2A1F', attention: 2, stages: 2 }))).toMatchObject({ choice: '2A1F', dbo: true });
    expect(draftFromRow(row({ topology: '2A2F', attention: 2, ffn: 2, stages: 1 }))).toMatchObject({ choice: '2A2F', dbo: false });
  });

  it('another shape is a custom topology; more than 2 micro-batches and replicas are noted', () => {
    const f = draftFromRow(row({ stages: 4, replicas: 2, gpusUsed: 8 }))!;
    expect(f).toMatchObject({ choice: 'custom', custom: '3A1F', dbo: true });
    expect(f.note).toContain('From the Plan screen: 3A1F with 4 micro-batches x2');
    expect(f.note).toContain('the engine overlaps 2 (DBO)');
    expect(f.note).toContain('the plan runs 2 copies');
  });

  it('colocated replicas', () => {
    expect(draftFromRow(row({ kind: 'colocated', topology: 'colocated', replicas: 4 }))).toMatchObject({ choice: 'colocated', replicas: 4 });
    expect(rowLabel(row({ kind: 'colocated', topology: 'colocated', replicas: 4 }))).toBe('4 colocated replicas');
    expect(rowLabel(row({ stages: 2 }))).toBe('3A1F with DBO');
  });

  it('an FFN expert-parallel group turns expert parallelism on; EP-only serving cannot be launched from here', () => {
    expect(draftFromRow(row({ topology: '2A2F', attention: 2, ffn: 2, epSize: 2 }))).toMatchObject({ choice: '2A2F', expertParallel: true });
    expect(draftFromRow(row({ topology: '2A2F', attention: 2, ffn: 2 }))).toMatchObject({ expertParallel: false });
    const ep = row({ kind: 'ep', topology: 'EP4', attention: 4, ffn: 4, epSize: 4 });
    expect(draftFromRow(ep)).toBeNull();
    expect(notLaunchable(ep)).toMatch(/not a topology the console launches/);
    expect(rowLabel(ep)).toMatch(/^EP4/);
  });
});

describe('profile curves', () => {
  it('attention per context in batch order, FFN, one series per connector', () => {
    const c = profileCurves(profile);
    expect(c.attention.map((s) => s.name)).toEqual(['context 16', 'context 256']);
    expect(c.attention[0]!.points.map((p) => p.x)).toEqual([1, 4, 16]);
    expect(c.ffn[0]!.points.map((p) => p.x)).toEqual([1, 4, 16, 64]);
    expect(c.connectors.map((s) => s.name)).toEqual(['tcp']);
  });
});
