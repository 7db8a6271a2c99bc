/**
 * The engine's penalty slots (StepExtras.penaltySlots), handed out by the scheduler: one per
 * running sequence with a penalty on, taken when it enters a step, given back when it
 * finishes or is preempted. The lowest free slot goes first, so the engine's table grows
 * only to the most such sequences ever running at once.
 */
import { MAX_PENALTY_SLOTS } from '@afd/shared';
import { SlotPool } from './SlotPool.js';

export class PenaltySlots extends SlotPool {
  constructor() {
    super('PenaltySlots', MAX_PENALTY_SLOTS);
  }
}
