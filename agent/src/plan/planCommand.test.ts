/** afd-agent plan from a profile file: the ranking, the reason, the sources, and its errors. */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { PROFILE_VERSION, type CostProfile } from '@afd/shared';
import { runPlan, type PlanFlags } from './planCommand.js';
import { formatPlanTable } from './planReport.js';

// A GPU-like profile: the FFN is flat in tokens (weight reads), attention grows with the batch.
const profile: CostProfile = {
  version: PROFILE_VERSION,
  measuredAt: '2026-12-07T00:00:00.000Z',
  backend: 'cuda',
  device: 'NVIDIA H100 80GB HBM3',
  driver: '580.1',
  threads: 0,
  commit: 'abc1234',
  model: { name: 'qwen3_moe/qwen3-30b-a3b', numLayers: 48, hiddenSize: 2048, wireBytesPerElement: 2, weightBytes: 61e9 },
  attention: [{ batch: 1, context: 1024, ms: 1 }, { batch: 64, context: 1024, ms: 12 }],
  ffn: [{ tokens: 1, ms: 2 }, { tokens: 256, ms: 8 }],
  connectors: [],
};
const file = join(mkdtempSync(join(tmpdir(), 'afd-plan-')), 'h100.json');
writeFileSync(file, JSON.stringify(profile));
const flags: PlanFlags = { gpus: '8', tpotMs: '30', model: 'qwen3_moe/qwen3-30b-a3b', profile: file, link: 'nvlink4', context: '1024', maxBatch: '256', stages: '1,2', backend: 'cpu', top: '5' };

describe('afd-agent plan', () => {
  it('ranks topologies from a profile over a published link and says why the winner wins', async () => {
    const r = await runPlan(flags, () => {});
    expect(r.rows.length).toBeGreaterThan(5);
    for (const row of r.rows) expect(row.tpotMs).toBeLessThanOrEqual(30);
    expect(r.rows[0]!.tokensPerSPerGpu).toBe(Math.max(...r.rows.map((x) => x.tokensPerSPerGpu)));
    expect(r.reason).toMatch(r.useAfd ? /^use AFD: / : /^do not use AFD here: /);
    expect(r.linkSource).toMatch(/published: NVLink4 900 GB\/s per H100/);
    const table = formatPlanTable(r, 5);
    expect(table).toContain('profile: qwen3_moe/qwen3-30b-a3b on cuda NVIDIA H100 80GB HBM3 (580.1), commit abc1234');
    expect(table).toContain('link: nvlink4: published: NVLink4');
    expect(table.split('\n').filter((l) => /^\d+ /.test(l))).toHaveLength(5);
    expect(table).toContain(r.reason);
  });

  it('refuses a profile of another model, an unknown link and a missing measured connector', async () => {
    await expect(runPlan({ ...flags, model: 'qwen3_moe/tiny' }, () => {})).rejects.toThrow(/was measured on qwen3_moe\/qwen3-30b-a3b, not --model qwen3_moe\/tiny/);
    await expect(runPlan({ ...flags, link: 'ib9000' }, () => {})).rejects.toThrow(/link "ib9000" is not a preset/);
    await expect(runPlan({ ...flags, link: 'profile' }, () => {})).rejects.toThrow(/the profile has no tcp connector curve \(it has: none\); pass --link with a preset/);
    await expect(runPlan({ ...flags, tpotMs: '-1' }, () => {})).rejects.toThrow(/--tpot-ms must be a positive number/);
  });

  it('bounds the batch by memory: a 61 GB MoE model on 40 GiB cards drops colocated and unsplit FFN ranks, says why, and favours EP', async () => {
    const big: CostProfile = { ...profile, model: { ...profile.model, attentionWeightBytes: 5e9, ffnWeightBytes: 56e9, kvBytesPerToken: 98304, moe: { numExperts: 128, topK: 8 } }, deviceMemoryBytes: 80 * 1024 ** 3 };
    const bigFile = join(mkdtempSync(join(tmpdir(), 'afd-plan-')), 'big.json');
    writeFileSync(bigFile, JSON.stringify(big));
    const r = await runPlan({ ...flags, profile: bigFile, gpuMemGib: '40', top: '40' }, () => {});
    expect(r.memory).toEqual({ deviceBytes: 40 * 1024 ** 3, notes: ['device memory 40 GiB from --gpu-mem-gib'] });
    expect(r.dropped).toContainEqual({ kind: 'colocated', topology: '8 colocated replicas', reason: 'colocated: 57 GiB of weights do not fit 40 GiB' });
    expect(r.rows.every((row) => row.kind === 'ep' || row.epSize >= 2)).toBe(true);
    expect(r.rows.some((row) => row.gate === 'attention')).toBe(true);
    const table = formatPlanTable(r, 40);
    expect(table).toContain('memory: 40 GiB per GPU, weights + KV bound the batch');
    expect(table).toMatch(/dropped for memory:\n {2}8 colocated replicas: colocated: 57 GiB of weights do not fit 40 GiB/);
    expect(table).toMatch(/\[\d\] FFN at EP \d+ scaled: ffn\(tokens of the group\) \/ \d+ \(no EP curve in the profile\), at the busiest rank's rows \(uniform routing\)/);
    const balanced = await runPlan({ ...flags, profile: bigFile, gpuMemGib: '40', top: '40', epBalanced: true }, () => {});
    expect(balanced.rows.flatMap((row) => row.notes).filter((n) => n.startsWith('FFN at EP')).every((n) => n.endsWith('ranks taken as balanced'))).toBe(true);
    const ep8 = (rows: typeof r.rows) => rows.find((row) => row.topology === 'EP8')!;
    expect(ep8(balanced.rows).tokensPerS).toBeGreaterThanOrEqual(ep8(r.rows).tokensPerS);
    // The profile's own 80 GiB card holds every shape.
    const roomy = await runPlan({ ...flags, profile: bigFile, gate: 'ffn' }, () => {});
    expect(roomy.dropped).toEqual([]);
    expect(roomy.rows.every((row) => row.gate !== 'attention')).toBe(true);
  });

  it('a version-1 profile without device memory: capacity is not modelled and the report says so', async () => {
    const r = await runPlan(flags, () => {});
    expect(r.memory).toEqual({ deviceBytes: null, notes: ['memory capacity not modelled: the profile has no device memory; pass --gpu-mem-gib'] });
    expect(formatPlanTable(r, 3)).toContain('memory capacity not modelled');
  });

  it('ranks sharing devices: engine threads on CPU cores, and MPS shares', async () => {
    const own = await runPlan({ ...flags, stages: '1' }, () => {});
    const cpu = await runPlan({ ...flags, stages: '1', sharedDevice: 'cpu:4' }, () => {});
    const best = (rows: typeof own.rows, t: string) => rows.find((row) => row.topology === t)!;
    expect(best(cpu.rows, 'colocated').tokensPerSPerGpu).toBeLessThan(best(own.rows, 'colocated').tokensPerSPerGpu);
    expect(cpu.query.device).toEqual({ kind: 'cpu', cores: 4 });
    const mps = await runPlan({ ...flags, sharedDevice: 'mps:attention=50,ffn=50' }, () => {});
    expect(mps.rows.filter((row) => row.kind === 'afd').every((row) => row.gpusUsed === row.replicas * row.attention)).toBe(true);
    expect(formatPlanTable(mps, 3)).toContain('shared device: MPS, attention 50% / FFN 50% of the SMs, xAyF on x GPUs');
    await expect(runPlan({ ...flags, sharedDevice: 'cpu:x' }, () => {})).rejects.toThrow(/cpu:<cores> needs a positive number of cores/);
    await expect(runPlan({ ...flags, gate: 'router' }, () => {})).rejects.toThrow(/--gate takes ffn, attention or both/);
    await expect(runPlan({ ...flags, gpuMemGib: '0' }, () => {})).rejects.toThrow(/--gpu-mem-gib must be a positive number of GiB/);
  });
});
