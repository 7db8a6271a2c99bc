/**
 * Numbered engine slots the scheduler hands out to running sequences, at most `limit` at a
 * time: penalty slots (StepExtras.penaltySlots, PenaltySlots.ts) and recurrent-state slots
 * (StepPlan.stateSlots, of a model with linear-attention layers). The lowest free slot goes
 * first, so the slots in use stay below the most sequences ever holding one at once (the
 * engine's penalty table grows only that far).
 */
import { STATE_SLOTS_NO_PREFIX_REUSE } from '../engineLike.js';

export class SlotPool {
  /** Free slots below `next`, lowest last (popped first). */
  private readonly free: number[] = [];
  private next = 0;

  constructor(
    /** Names the pool in errors. */
    readonly name: string,
    /** Slots 0..limit-1 exist. */
    readonly limit: number,
  ) {
    if (!Number.isInteger(limit) || limit < 0) throw new Error(`${name}: the slot limit must be an integer >= 0 (got ${limit})`);
  }

  /** Slots in use. */
  get numTaken(): number {
    return this.next - this.free.length;
  }

  /** Slots that take() may still hand out. */
  get numFree(): number {
    return this.limit - this.numTaken;
  }

  /** The lowest free slot; throws when all `limit` are taken. */
  take(): number {
    if (this.free.length > 0) return this.free.pop()!;
    if (this.next >= this.limit) throw new Error(`${this.name}: all ${this.limit} slots are taken`);
    return this.next++;
  }

  /** Gives a taken slot back; throws for a slot that is not taken. */
  give(slot: number): void {
    if (slot < 0 || slot >= this.next || this.free.includes(slot)) throw new Error(`${this.name}: slot ${slot} is not taken`);
    // Keep `free` sorted descending so pop() returns the lowest.
    let i = this.free.length;
    while (i > 0 && this.free[i - 1]! < slot) i--;
    this.free.splice(i, 0, slot);
  }
}

/**
 * The scheduler's recurrent-state slots (a model with linear-attention layers), or null for
 * numStateSlots 0. Every running sequence holds one, so there must be maxNumSeqs at least;
 * and as a slot holds only its own sequence's history, prefix caching must be off.
 */
export function stateSlotPool(numStateSlots: number, maxNumSeqs: number, prefixCaching: boolean): SlotPool | null {
  if (numStateSlots === 0) return null;
  if (maxNumSeqs > numStateSlots) {
    throw new Error(`Scheduler: maxNumSeqs ${maxNumSeqs} is more than the engine's ${numStateSlots} recurrent-state slots (numStateSlots): every running sequence holds one; lower maxNumSeqs or give the engine at least ${maxNumSeqs} slots`);
  }
  if (prefixCaching) {
    throw new Error(`Scheduler: prefix caching must be off with recurrent-state slots (numStateSlots > 0): ${STATE_SLOTS_NO_PREFIX_REUSE}`);
  }
  return new SlotPool('StateSlots', numStateSlots);
}
