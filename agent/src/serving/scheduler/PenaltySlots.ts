/**
 * The engine's penalty slots (StepExtras.penaltySlots), handed out by the scheduler: one per
 * running sequence with a penalty on, taken when it enters a step, given back when it
 * finishes or is preempted. The lowest free slot goes first, so the engine's table grows
 * only to the most such sequences ever running at once.
 */
import { MAX_PENALTY_SLOTS } from '@afd/shared';

export class PenaltySlots {
  /** Free slots below `next`, lowest last (popped first). */
  private readonly free: number[] = [];
  private next = 0;

  /** Slots in use. */
  get numTaken(): number {
    return this.next - this.free.length;
  }

  take(): number {
    if (this.free.length > 0) return this.free.pop()!;
    if (this.next >= MAX_PENALTY_SLOTS) throw new Error(`PenaltySlots: all ${MAX_PENALTY_SLOTS} slots are taken`);
    return this.next++;
  }

  give(slot: number): void {
    if (slot < 0 || slot >= this.next || this.free.includes(slot)) throw new Error(`PenaltySlots: slot ${slot} is not taken`);
    // Keep `free` sorted descending so pop() returns the lowest.
    let i = this.free.length;
    while (i > 0 && this.free[i - 1]! < slot) i--;
    this.free.splice(i, 0, slot);
  }
}
