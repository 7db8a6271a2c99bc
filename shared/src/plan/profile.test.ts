import { describe, expect, it } from 'vitest';
import { PROFILE_VERSION, parseCostProfile, type CostProfile } from './profile.js';

const sampleProfile: CostProfile = {
  version: PROFILE_VERSION,
  measuredAt: '2026-12-07T00:00:00.000Z',
  backend: 'cpu',
  device: 'AMD EPYC',
  driver: 'linux 6.1',
  threads: 1,
  commit: 'abc1234',
  model: { name: 'qwen3_moe/tiny', numLayers: 4, hiddenSize: 256, wireBytesPerElement: 4, weightBytes: 92e6 },
  attention: [{ batch: 1, context: 16, ms: 4 }],
  ffn: [{ tokens: 1, ms: 0.25 }],
  connectors: [{ connector: 'tcp', points: [{ bytes: 1024, ms: 0.05 }] }],
};

describe('cost profile', () => {
  it('round-trips through JSON', () => {
    expect(parseCostProfile(JSON.stringify(sampleProfile))).toEqual(sampleProfile);
  });

  it('refuses another version, naming the versions it reads', () => {
    expect(() => parseCostProfile(JSON.stringify({ ...sampleProfile, version: 3 }), 'gpu.json')).toThrow(/gpu\.json: profile version 3 is not supported \(this build reads versions 1 and 2/);
  });

  it('loads a version-1 profile (no memory, MoE or EP fields) as is', () => {
    const v1 = { ...sampleProfile, version: 1 };
    expect(parseCostProfile(JSON.stringify(v1))).toEqual(v1);
  });

  it('round-trips the version-2 fields', () => {
    const v2: CostProfile = {
      ...sampleProfile,
      model: { ...sampleProfile.model, attentionWeightBytes: 80e6, ffnWeightBytes: 12e6, kvBytesPerToken: 4 * 4 * 64 * 2 * 4, moe: { numExperts: 8, topK: 2 } },
      deviceMemoryBytes: 80e9,
      ffnEp: [{ epSize: 2, points: [{ tokens: 2, ms: 0.2 }] }],
      gate: [{ tokens: 1, ms: 0.01 }],
      smShares: [{ role: 'attention', share: 0.5, slowdown: 1.6 }],
    };
    expect(parseCostProfile(JSON.stringify(v2))).toEqual(v2);
    expect(() => parseCostProfile(JSON.stringify({ ...v2, smShares: [{ role: 'ffn', share: 0.5, slowdown: 0.5 }] }))).toThrow(/smShares\.0\.slowdown/);
  });

  it('names the field that is wrong', () => {
    expect(() => parseCostProfile(JSON.stringify({ ...sampleProfile, ffn: [{ tokens: 0, ms: 1 }] }))).toThrow(/profile: ffn\.0\.tokens:/);
    expect(() => parseCostProfile(JSON.stringify({ ...sampleProfile, attention: [] }))).toThrow(/attention/);
    expect(() => parseCostProfile('{nope', 'x.json')).toThrow(/x\.json: not JSON/);
  });
});
