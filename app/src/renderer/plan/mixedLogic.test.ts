/** The Plan screen's mixed cluster: the CLI's rules for card kinds, prices, profiles and link; the candidates as Topology drafts. */
import { describe, expect, it } from 'vitest';
import { findCard, parseCostProfile, rooflineProfile, presetShape, type HeteroRow } from '@afd/shared';
import { CPU_PROFILE_TEXT } from '../testing/planProfile.js';
import { defaultPlanInputs } from './planLogic.js';
import { defaultMixedInputs, isMixed, mixedJob, newMixedRow, runMixedJob, type MixedRow } from './mixedLogic.js';
import { draftFromMixedRow, mixedNotLaunchable } from './mixedDraft.js';

const inputs = { ...defaultPlanInputs, link: 'ib400', tpotMs: 50, context: 4096, stages: '1,2' };
const row = (card: string, o: Partial<MixedRow> = {}): MixedRow => ({ card, gpus: 4, price: NaN, costs: 'roofline', ...o });
const two = { ...defaultMixedInputs, model: 'qwen3_moe/qwen3-30b-a3b', rows: [row('h20', { price: 1 }), row('H800 ', { price: 2.5 })] };

describe('mixed cluster inputs', () => {
  it('is planned from two kinds on; a new row takes a card not yet named', () => {
    expect(isMixed(defaultMixedInputs)).toBe(false);
    expect(isMixed({ ...two, rows: [row('h20')] })).toBe(false);
    expect(isMixed(two)).toBe(true);
    expect(newMixedRow([row('h100')], ['h100', 'h200'])).toEqual({ card: 'h200', gpus: 2, price: NaN, costs: 'roofline' });
  });

  it('checks the rows into a job of plain data: cards lower case, prices, the shared fields', () => {
    const r = mixedJob(two, inputs, null);
    if (!r.ok) throw new Error(r.error);
    expect(r.job).toEqual({ kinds: [{ card: 'h20', gpus: 4, price: 1 }, { card: 'h800', gpus: 4, price: 2.5 }], model: 'qwen3_moe/qwen3-30b-a3b', link: 'ib400', query: { tpotMs: 50, context: 4096, maxBatch: 256, stageCounts: [1, 2] } });
  });

  it("refuses what the CLI refuses, naming the kind", () => {
    const err = (m: typeof two, i = inputs) => {
      const r = mixedJob(m, i, null);
      return r.ok ? null : r.error;
    };
    expect(err({ ...two, rows: [row('h20'), row('h20')] })).toBe('Card kind 2: h20 is named twice');
    expect(err({ ...two, rows: [row('h 20'), row('h100')] })).toMatch(/^Card kind 1: name a card/);
    expect(err({ ...two, rows: [row('h20', { gpus: 0 }), row('h100')] })).toMatch(/^Card kind 1 \(h20\): GPUs must be a whole number/);
    expect(err({ ...two, rows: [row('h20', { price: -1 }), row('h100')] })).toMatch(/the price must be a number above 0/);
    expect(err({ ...two, rows: [row('h20', { price: 1 }), row('h100')] })).toBe('Prices: give every card kind a price, or none (missing: h100)');
    expect(err({ ...two, rows: [row('h20', { costs: 'profile' }), row('h100')] })).toMatch(/none is loaded/);
    expect(err(two, { ...inputs, link: 'profile:tcp' })).toMatch(/^Link: a mixed cluster needs a link preset/);
    expect(err(two, { ...inputs, stages: 'x' })).toMatch(/^Micro-batches/);
  });

  it('ranks as heteroSearch does, each kind priced by the roofline of its published figures', () => {
    const r = mixedJob(two, inputs, null);
    if (!r.ok) throw new Error(r.error);
    const res = runMixedJob(r.job);
    for (const c of res.cards) expect(c.costs).toMatch(/^roofline from published figures \(not measured\): /);
    expect(res.cards[0]).toMatchObject({ card: 'h20', label: 'NVIDIA H20 96GB', gpus: 4, price: 1 });
    expect(res.rows[0]!.tokensPerSPerGpu).toBe(Math.max(...res.rows.map((x) => x.tokensPerSPerGpu)));
    expect(res.bestByPrice?.tokensPerSPerPrice).toBe(Math.max(...res.rows.map((x) => x.tokensPerSPerPrice!)));
    expect(res.reason).toMatch(/^(use AFD|do not use AFD here): .*per unit of price the best is/);
  });

  it('a kind priced by the loaded profile uses it; a profile of another model is refused as by the CLI', () => {
    const measured = { ...rooflineProfile(findCard('h800'), presetShape('qwen3_moe/qwen3-30b-a3b'), { at: '2026-12-07T00:00:00.000Z' }), source: 'measured' as const, device: 'NVIDIA H800' };
    const withProfile = { ...two, rows: [row('h20', { price: 1 }), row('h800', { price: 2.5, costs: 'profile' })] };
    const r = mixedJob(withProfile, inputs, { source: 'h800.json', profile: measured });
    if (!r.ok) throw new Error(r.error);
    expect(runMixedJob(r.job).cards[1]!.costs).toBe('measured: h800.json (NVIDIA H800, 2026-12-07T00:00:00.000Z)');
    const cpu = mixedJob(withProfile, inputs, { source: 'cpu.json', profile: parseCostProfile(CPU_PROFILE_TEXT) });
    if (!cpu.ok) throw new Error(cpu.error);
    expect(() => runMixedJob(cpu.job)).toThrow('the h800 profile cpu.json was measured on qwen3_moe/tiny, not the model qwen3_moe/qwen3-30b-a3b');
    expect(() => runMixedJob({ ...cpu.job, kinds: cpu.job.kinds.map((k) => ({ ...k, measured: undefined })), model: 'qwen3_moe/tiny' })).toThrow(/unknown model "tiny"/);
  });
});

describe('a mixed candidate as a Topology draft', () => {
  const base: HeteroRow = { kind: 'afd', attentionCard: 'h200', ffnCard: 'h100', topology: '3A1F', attention: 3, ffn: 1, stages: 2, replicas: 2, batchPerRank: 64, tpotMs: 30, gpus: { h200: { afd: 6, colocated: 0, idle: 0 }, h100: { afd: 2, colocated: 2, idle: 0 } }, tokensPerS: 1000, tokensPerSPerGpu: 100, tokensPerSPerPrice: 40 };

  it('an AFD candidate fills the shape and says where each role goes and what is left out', () => {
    const fill = draftFromMixedRow(base)!;
    expect(fill).toMatchObject({ choice: 'custom', custom: '3A1F', dbo: true, expertParallel: false });
    expect(fill.note).toContain('From the Plan screen: A on h200, F on h100: 3A1F DBO x2 + colocated 2 h100');
    expect(fill.note).toContain('assign h200 GPUs to the attention ranks and h100 GPUs to the FFN ranks');
    expect(fill.note).toContain('the plan runs 2 copies; this launches one');
    expect(fill.note).toContain('(2 h100) are not launched');
    expect(draftFromMixedRow({ ...base, topology: '2A1F', stages: 1 })).toMatchObject({ choice: '2A1F', dbo: false });
  });

  it('colocated replicas of one kind launch; of several kinds they do not, and say why', () => {
    const one: HeteroRow = { ...base, kind: 'colocated', attentionCard: null, ffnCard: null, topology: 'colocated', gpus: { h200: { afd: 0, colocated: 4, idle: 0 }, h100: { afd: 0, colocated: 0, idle: 4 } } };
    expect(mixedNotLaunchable(one)).toBeNull();
    expect(draftFromMixedRow(one)).toMatchObject({ choice: 'colocated', replicas: 4 });
    const both: HeteroRow = { ...one, gpus: { h200: { afd: 0, colocated: 4, idle: 0 }, h100: { afd: 0, colocated: 4, idle: 0 } } };
    expect(mixedNotLaunchable(both)).toMatch(/^colocated replicas on h200 and h100 run different batches per kind/);
    expect(draftFromMixedRow(both)).toBeNull();
  });
});
