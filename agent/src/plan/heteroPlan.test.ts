/** afd-agent plan --gpus h200:8,h100:16 --price ...: card kinds, roofline or measured per kind, and the errors. */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { findCard, modelPreset, rooflineProfile } from '@afd/shared';
import { formatHeteroTable, isHeteroGpus, parseGpuKinds, runHeteroPlan, type HeteroFlags } from './heteroPlan.js';

const flags: HeteroFlags = { gpus: 'h20:4,h800:4', tpotMs: '50', model: 'qwen3_moe/qwen3-30b-a3b', link: 'ib400', context: '4096', maxBatch: '256', stages: '1,2', top: '6' };

describe('afd-agent plan with card kinds', () => {
  it('tells a count from card kinds, and parses card:count lists', () => {
    expect(isHeteroGpus('8')).toBe(false);
    expect(isHeteroGpus('h200:8,h100:16')).toBe(true);
    expect(parseGpuKinds('H200:8, h100:16')).toEqual([{ card: 'h200', gpus: 8 }, { card: 'h100', gpus: 16 }]);
  });

  it('prices each kind by the roofline of its published figures, labelled so, and ranks per GPU and per price', () => {
    const r = runHeteroPlan({ ...flags, price: 'h20=1,h800=2.5' });
    expect(r.cards.map((c) => c.card)).toEqual(['h20', 'h800']);
    for (const c of r.cards) expect(c.costs).toMatch(/^roofline from published figures \(not measured\): (published|reported): /);
    expect(r.rows.length).toBeGreaterThan(5);
    expect(r.rows[0]!.tokensPerSPerGpu).toBe(Math.max(...r.rows.map((x) => x.tokensPerSPerGpu)));
    expect(r.bestByPrice!.tokensPerSPerPrice).toBe(Math.max(...r.rows.map((x) => x.tokensPerSPerPrice!)));
    for (const row of r.rows) expect(row.tpotMs).toBeLessThanOrEqual(50);
    // memory from the cards' published figures: 256 sequences of 4096 tokens need 103 GB of KV, more than either card has
    expect(r.cards.map((c) => c.memoryBytes)).toEqual([96e9, 80e9]);
    for (const row of r.rows) expect(row.batchPerRank).toBeLessThanOrEqual(128);
    const table = formatHeteroTable(r, 6);
    expect(table).toContain('h20: 4 x NVIDIA H20 96GB, price 1, 89 GiB per GPU; costs: roofline from published figures');
    expect(table).toContain('link: ib400: published: InfiniBand NDR');
    expect(table).toContain('tok/s/price');
    expect(table.split('\n').filter((l) => /^\d+ /.test(l))).toHaveLength(6);
    expect(table).toContain(r.reason);
  });

  it('uses a measured profile for a kind given with --profile card=file', () => {
    const computed = rooflineProfile(findCard('h800'), { ...modelPreset('qwen3-30b-a3b'), name: flags.model }, { at: '2026-12-07T00:00:00.000Z' });
    const p = { ...computed, source: 'measured' as const, device: 'NVIDIA H800' };
    const file = join(mkdtempSync(join(tmpdir(), 'afd-hetero-')), 'h800.json');
    writeFileSync(file, JSON.stringify(p));
    const r = runHeteroPlan({ ...flags, profile: [`h800=${file}`] });
    expect(r.cards.find((c) => c.card === 'h800')!.costs).toBe(`measured: ${file} (NVIDIA H800, 2026-12-07T00:00:00.000Z)`);
    expect(r.cards.find((c) => c.card === 'h20')!.costs).toMatch(/^roofline/);
    expect(() => runHeteroPlan({ ...flags, gpus: 'h800:4', model: 'qwen3_moe/x', profile: `h800=${file}` })).toThrow(/was measured on qwen3_moe\/qwen3-30b-a3b, not --model qwen3_moe\/x/);
    // a card outside the table serves from its measured profile, labelled by the profile's device
    const other = runHeteroPlan({ ...flags, gpus: 'h20:4,mi300:4', profile: `mi300=${file}` });
    expect(other.cards.find((c) => c.card === 'mi300')).toMatchObject({ label: 'NVIDIA H800', costs: `measured: ${file} (NVIDIA H800, 2026-12-07T00:00:00.000Z)` });
  });

  it('refuses bad --gpus and --price syntax, unknown cards (naming the known ones), and a measured link', () => {
    expect(() => runHeteroPlan({ ...flags, gpus: 'h200=8' })).toThrow(/--gpus: "h200=8" is not card:count \(e\.g\. h200:8,h100:16\)/);
    expect(() => runHeteroPlan({ ...flags, gpus: 'mi300:8' })).toThrow(/unknown card "mi300": known cards are h100, h800, h200, b200, gb200, a100, h20, l40s \(or measure it: --profile mi300=file\.json\)/);
    expect(() => runHeteroPlan({ ...flags, gpus: 'h20:4,h20:2' })).toThrow(/--gpus: h20 is named twice/);
    expect(() => runHeteroPlan({ ...flags, gpus: 'h20:0' })).toThrow(/--gpus h20 must be an integer from 1 to 4096, got "0"/);
    expect(() => runHeteroPlan({ ...flags, price: 'h20:1' })).toThrow(/--price: "h20:1" is not card=price \(e\.g\. h200=3\.5,h100=2\.2\)/);
    expect(() => runHeteroPlan({ ...flags, price: 'h20=1' })).toThrow(/--price: give every card of --gpus a price \(missing: h800\)/);
    expect(() => runHeteroPlan({ ...flags, price: 'h20=1,h800=-2' })).toThrow(/--price: h800=-2 is not a positive number/);
    expect(() => runHeteroPlan({ ...flags, price: 'h20=1,h100=2' })).toThrow(/--price: h100 is not among --gpus \(h20, h800\)/);
    expect(() => runHeteroPlan({ ...flags, link: 'profile' })).toThrow(/needs --link with a preset/);
    expect(() => runHeteroPlan({ ...flags, model: 'qwen3_moe/nope' })).toThrow(/unknown model "nope": known shapes are/);
  });
});
