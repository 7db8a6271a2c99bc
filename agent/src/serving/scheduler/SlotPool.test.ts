import { describe, expect, it } from 'vitest';
import { MAX_PENALTY_SLOTS } from '@afd/shared';
import { PenaltySlots } from './PenaltySlots.js';
import { SlotPool } from './SlotPool.js';

describe('SlotPool', () => {
  it('hands out the lowest free slot, up to its limit, and takes slots back', () => {
    const pool = new SlotPool('StateSlots', 3);
    expect([pool.take(), pool.take(), pool.take()]).toEqual([0, 1, 2]);
    expect(pool.numTaken).toBe(3);
    expect(pool.numFree).toBe(0);
    expect(() => pool.take()).toThrow('StateSlots: all 3 slots are taken');
    pool.give(2);
    pool.give(0);
    expect(pool.numFree).toBe(2);
    expect([pool.take(), pool.take()]).toEqual([0, 2]);
  });

  it('refuses to take back a slot that is not taken, naming the pool', () => {
    const pool = new SlotPool('StateSlots', 4);
    expect(() => pool.give(0)).toThrow('StateSlots: slot 0 is not taken');
    pool.take();
    pool.give(0);
    expect(() => pool.give(0)).toThrow('StateSlots: slot 0 is not taken');
    expect(() => new SlotPool('X', -1)).toThrow('X: the slot limit must be an integer >= 0');
  });

  it('PenaltySlots is a pool of MAX_PENALTY_SLOTS', () => {
    const slots = new PenaltySlots();
    expect(slots.limit).toBe(MAX_PENALTY_SLOTS);
    expect(slots.name).toBe('PenaltySlots');
    expect(slots.take()).toBe(0);
  });
});
