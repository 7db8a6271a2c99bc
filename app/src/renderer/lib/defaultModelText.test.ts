import { describe, expect, it } from 'vitest';
import type { DefaultModel, Inventory } from '@afd/shared';
import { fakeInventory } from '../../common/testing/fakeInventory.js';
import { defaultModelLines } from './defaultModelText.js';

const demo: DefaultModel = { kind: 'demo', name: 'afd-demo-moe', dir: '/repo/models/afd-demo-moe', description: 'demo model trained on English from Debian packages' };
const tiny: DefaultModel = { kind: 'tiny', name: 'tiny-qwen3-moe', dir: '/home/u/.afd/models/tiny-qwen3-moe', description: null };
const agent = (agentId: string, defaultModel: DefaultModel | null) => ({ agentId, inventory: { ...fakeInventory(agentId, 4, 0), defaultModel } satisfies Inventory });

describe('what an empty model directory launches', () => {
  it('names the demo model the agents load, from their inventory', () => {
    expect(defaultModelLines(['a', 'b'], [agent('a', demo), agent('b', demo)])).toEqual([
      'The built-in model: afd-demo-moe, the trained demo model in /repo/models/afd-demo-moe; demo model trained on English from Debian packages.',
    ]);
  });

  it('says when it is the random tiny model', () => {
    expect(defaultModelLines(['a'], [agent('a', tiny)])).toEqual([
      'The built-in model: tiny-qwen3-moe, a tiny Qwen3-MoE with random weights (its replies are not language; made in /home/u/.afd/models/tiny-qwen3-moe at the first launch if missing).',
    ]);
  });

  it('one line per agent when they differ, and an agent that does not say is not guessed at', () => {
    const lines = defaultModelLines(['a', 'b', 'c', 'd'], [agent('a', demo), agent('b', tiny), agent('c', null), { agentId: 'd', inventory: null }]);
    expect(lines).toHaveLength(4);
    expect(lines[0]).toMatch(/^a: afd-demo-moe, the trained demo model/);
    expect(lines[1]).toMatch(/^b: tiny-qwen3-moe, a tiny Qwen3-MoE with random weights/);
    expect(lines[2]).toBe("c: the agent's built-in model (this agent does not say which: an older agent).");
    expect(lines[3]).toBe("d: the agent's built-in model (not known until the agent is connected).");
  });

  it('with no agent to run ranks, says what decides it', () => {
    expect(defaultModelLines([], [])).toEqual([expect.stringMatching(/^The agents' built-in model: the trained demo model where an agent's install carries it, else a tiny random-weight Qwen3-MoE/)]);
  });
});
