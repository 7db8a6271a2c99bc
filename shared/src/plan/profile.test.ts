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

  it('refuses another version, naming both versions', () => {
    expect(() => parseCostProfile(JSON.stringify({ ...sampleProfile, version: 2 }), 'gpu.json')).toThrow(/gpu\.json: profile version 2 is not supported \(this build reads version 1/);
  });

  it('names the field that is wrong', () => {
    expect(() => parseCostProfile(JSON.stringify({ ...sampleProfile, ffn: [{ tokens: 0, ms: 1 }] }))).toThrow(/profile: ffn\.0\.tokens:/);
    expect(() => parseCostProfile(JSON.stringify({ ...sampleProfile, attention: [] }))).toThrow(/attention/);
    expect(() => parseCostProfile('{nope', 'x.json')).toThrow(/x\.json: not JSON/);
  });
});
