import { describe, expect, it } from 'vitest';
import { planTopology, topologyPlanSchema } from './plan.js';
import { resolveTopology } from './spec.js';

describe('planTopology', () => {
  it('describes 3A2F completely and validates against its schema', () => {
    const plan = planTopology(resolveTopology('3a2f'));
    expect(plan).toEqual({
      name: '3A2F',
      attention: { ranks: 3, dp: 3, tp: 1 },
      ffn: { ranks: 2, dp: 2, tp: 1 },
      worldSize: 5,
      world: [
        { worldRank: 0, role: 'ffn', rank: 0 },
        { worldRank: 1, role: 'ffn', rank: 1 },
        { worldRank: 2, role: 'attention', rank: 0 },
        { worldRank: 3, role: 'attention', rank: 1 },
        { worldRank: 4, role: 'attention', rank: 2 },
      ],
      blocks: [
        { ffnRank: 0, attentionRanks: [0, 1], controlPublishers: [0, 1] },
        { ffnRank: 1, attentionRanks: [2], controlPublishers: [2] },
      ],
    });
    expect(topologyPlanSchema.parse(JSON.parse(JSON.stringify(plan)))).toEqual(plan);
  });
});
