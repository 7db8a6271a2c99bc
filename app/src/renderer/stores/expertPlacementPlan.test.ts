import { describe, expect, it } from 'vitest';
import type { AgentInfo } from '@afd/shared';
import { modelExperts, plannedExpertPlacement } from './expertPlacementPlan.js';

describe('planned expert placement', () => {
  it('lists each FFN rank\'s range when the expert count is known', () => {
    expect(plannedExpertPlacement(3, true, 8).rows).toEqual(['F0: experts 0-2 of 8', 'F1: experts 3-5 of 8', 'F2: experts 6-7 of 8']);
  });

  it('shows the rule when the expert count is unknown, and says when nothing is split', () => {
    expect(plannedExpertPlacement(2, true, null).rows).toEqual(['F0: experts e with ⌊e·2/E⌋ = 0', 'F1: experts e with ⌊e·2/E⌋ = 1']);
    expect(plannedExpertPlacement(2, false, 8)).toEqual({ rows: [], note: 'Expert parallelism off: every FFN rank holds all the experts.' });
    expect(plannedExpertPlacement(1, true, 8).note).toMatch(/needs two or more FFN ranks/);
  });

  it('reads the expert count of the chosen model (empty = built-in) from the agents\' inventories', () => {
    const agents = [{ inventory: { models: [{ name: 'tiny-qwen3-moe', dir: '/h/.afd/models/tiny-qwen3-moe', numExperts: 8 }, { name: 'q', dir: '/m/q', numExperts: 128 }] } }] as unknown as AgentInfo[];
    expect(modelExperts(agents, '')).toBe(8);
    expect(modelExperts(agents, '/m/q')).toBe(128);
    expect(modelExperts(agents, '/m/other')).toBeNull();
  });
});
