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
});
