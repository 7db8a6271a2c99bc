/**
 * Test helper: a fake engine that keeps the paged KV cache's content (the token id at every
 * block slot) and reads it like a model would. Each step it checks that every cached
 * position a sequence attends to holds that sequence's token (a wrong block, an evicted or
 * overwritten one, shows here), writes the step's tokens into their slots, and samples
 * a token that depends on the whole context as read from the cache. So a scheduler that
 * hands a sequence corrupt KV produces other tokens than one that computes everything.
 */
import type { StepResult } from '@afd/shared';
import type { ScheduledStep } from '../scheduler/Scheduler.js';

export class KvContentEngine {
  /** Token id at each slot (block * blockSize + offset); -1 = never written. */
  private readonly slots: Int32Array;
  /** Tokens whose KV the steps computed (written) so far. */
  numComputedTokens = 0;

  constructor(
    numBlocks: number,
    private readonly blockSize: number,
    /** Vocabulary of the sampled tokens (they land in [10, 10 + vocab)). */
    private readonly vocab = 50,
  ) {
    this.slots = new Int32Array(numBlocks * blockSize).fill(-1);
  }

  step(step: ScheduledStep): StepResult {
    const { plan } = step;
    const tokenIds = new Int32Array(plan.numSeqs);
    step.entries.forEach(({ seq }, i) => {
      const table = plan.blockTables.subarray(i * plan.maxBlocksPerSeq, (i + 1) * plan.maxBlocksPerSeq);
      const start = plan.tokenOffsets[i]!;
      const numNew = plan.tokenOffsets[i + 1]! - start;
      const context = plan.contextLens[i]!;
      const slot = (pos: number): number => table[Math.floor(pos / this.blockSize)]! * this.blockSize + (pos % this.blockSize);
      for (let k = 0; k < numNew; k++) this.slots[slot(context - numNew + k)] = plan.tokenIds[start + k]!;
      this.numComputedTokens += numNew;
      let h = 17;
      for (let pos = 0; pos < context; pos++) {
        const t = this.slots[slot(pos)]!;
        if (t !== seq.tokenAt(pos)) throw new Error(`KV corrupt: ${seq.id} position ${pos} holds token ${t}, expected ${seq.tokenAt(pos)}`);
        h = (Math.imul(h, 31) + t + 1) >>> 0;
      }
      tokenIds[i] = 10 + (h % this.vocab);
    });
    return { tokenIds, stepTimeMs: 1 };
  }
}
