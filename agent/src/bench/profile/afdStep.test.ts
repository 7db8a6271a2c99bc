/** afd-bench afd-step: a real 2A2F of CPU role engines over loopback TCP, and its prediction from a profile. */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { PROFILE_VERSION, type CostProfile } from '@afd/shared';
import { measureAfdStep, predictAfdStep } from './afdStep.js';

describe('afd-bench afd-step', () => {
  it('times DBO steps of a 2A2F topology of real engines', { timeout: 120_000 }, async () => {
    const r = await measureAfdStep({ topology: '2A2F', batch: 2, context: 8, dbo: true, steps: 2, warmup: 1, threads: 1, arch: 'qwen3_moe', preset: 'tiny' });
    expect(r).toMatchObject({ topology: '2A2F', batchPerRank: 2, context: 8, dbo: true });
    expect(r.measuredTpotMs).toBeGreaterThan(0);
    expect(r.measuredTpotP10Ms).toBeLessThanOrEqual(r.measuredTpotMs);
    expect(r.measuredTpotP90Ms).toBeGreaterThanOrEqual(r.measuredTpotMs);
  });

  it('predicts the same shape from a profile: flat curves give the closed form', () => {
    const profile: CostProfile = {
      version: PROFILE_VERSION, measuredAt: 'x', backend: 'cpu', device: 'cpu', driver: 'linux', threads: 1, commit: 'c',
      model: { name: 'qwen3_moe/tiny', numLayers: 4, hiddenSize: 256, wireBytesPerElement: 4, weightBytes: 1 },
      attention: [{ batch: 1, context: 8, ms: 4 }], ffn: [{ tokens: 1, ms: 2 }], connectors: [{ connector: 'tcp', points: [{ bytes: 1024, ms: 0.5 }] }],
    };
    const file = join(mkdtempSync(join(tmpdir(), 'afd-step-')), 'p.json');
    writeFileSync(file, JSON.stringify(profile));
    // one stage: 4 layers x (attention 1 + 0.25 + FFN 0.5 + 0.25)
    expect(predictAfdStep(file, { topology: '2A2F', batch: 4, context: 8, dbo: false })).toBeCloseTo(8, 9);
    // --shared-device: the four engine threads on one core run the two blocks' attention (and FFN) side by side at half speed
    expect(predictAfdStep(file, { topology: '2A2F', batch: 4, context: 8, dbo: false }, 'cpu:1')).toBeCloseTo(4 * (2 + 0.25 + 1 + 0.25), 6);
    expect(predictAfdStep(file, { topology: '2A2F', batch: 4, context: 8, dbo: false }, 'cpu:2')).toBeCloseTo(8, 9);
  });
});
