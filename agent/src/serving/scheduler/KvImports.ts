/**
 * KV blocks that arrive from elsewhere (prefill/decode disaggregation: a prefill rank
 * computed a prompt's first full blocks and sent them). Before the transfer the scheduler
 * sets blocks aside under a hold (a block-manager owner of its own, and a recurrent-state
 * slot for a model that keeps state); the caller writes the KV into them; then the
 * request's samples are queued against the hold. Each sample is admitted sharing the
 * hold's blocks (reference counted, as the n samples of one prompt share theirs) and
 * computes only the tokens after them; the first one admitted takes the hold's state slot.
 * The hold is freed when its last sample is admitted or ends, or when the transfer fails.
 */
import type { BlockManager } from '../kv/BlockManager.js';
import type { SlotPool } from './SlotPool.js';
import type { Sequence } from './Sequence.js';

/** Blocks (and a state slot) set aside for an incoming transfer. */
export interface KvHold {
  /** The block manager's owner id of the hold. */
  readonly holdId: string;
  /** The blocks to write, in token order. */
  readonly blockIds: readonly number[];
  /** Tokens the blocks hold (blockIds.length x kvBlockSize). */
  readonly numTokens: number;
  /** The recurrent-state slot to write (a model with linear-attention layers), else null. */
  readonly stateSlot: number | null;
}

interface HoldState {
  hold: KvHold;
  /** Its state slot while no sample has taken it over. */
  slot: number | null;
  /** Samples queued against it and not admitted yet. */
  waiting: Set<Sequence>;
  /** False until samples are queued against it (a hold whose transfer runs has none). */
  queued: boolean;
}

export class KvImports {
  private nextId = 0;
  private readonly holds = new Map<string, HoldState>();
  private readonly bySeq = new Map<Sequence, HoldState>();

  constructor(
    private readonly blocks: BlockManager,
    private readonly stateSlots: SlotPool | null,
  ) {}

  /** Holds alive (transfers running, or samples waiting on one). */
  get size(): number {
    return this.holds.size;
  }

  /**
   * Sets aside `numBlocks` free blocks (and a state slot when the model keeps state), or
   * returns null when there is no room now (the caller prefills locally instead).
   * `reserveSlots`: state slots to leave free for sequences already queued.
   */
  hold(numBlocks: number, reserveSlots = 0): KvHold | null {
    if (!Number.isInteger(numBlocks) || numBlocks < 1) throw new Error(`KvImports.hold: numBlocks must be a positive integer, got ${numBlocks}`);
    const numTokens = numBlocks * this.blocks.kvBlockSize;
    if (!this.blocks.canAllocate(numTokens)) return null;
    if (this.stateSlots && this.stateSlots.numFree <= reserveSlots) return null;
    const holdId = `kv-import-${this.nextId++}`;
    const blockIds = [...this.blocks.allocate(holdId, numTokens)];
    const slot = this.stateSlots ? this.stateSlots.take() : null;
    const hold: KvHold = { holdId, blockIds, numTokens, stateSlot: slot };
    this.holds.set(holdId, { hold, slot, waiting: new Set(), queued: false });
    return hold;
  }

  /** Frees a hold no sample uses (its transfer failed or was abandoned). No-op for an unknown or released one. */
  release(hold: KvHold): void {
    const state = this.holds.get(hold.holdId);
    if (!state) return;
    for (const seq of state.waiting) this.bySeq.delete(seq);
    state.waiting.clear();
    this.drop(state);
  }

  /** The samples of one request start from the hold's blocks (called once, before they are queued). */
  attach(hold: KvHold, seqs: readonly Sequence[]): void {
    const state = this.holds.get(hold.holdId);
    if (!state) throw new Error(`KvImports.attach: hold ${hold.holdId} was released`);
    if (state.queued) throw new Error(`KvImports.attach: hold ${hold.holdId} already has its samples`);
    if (state.slot !== null && seqs.length > 1) throw new Error(`KvImports.attach: a hold with a recurrent-state slot serves one sample, not ${seqs.length}`);
    state.queued = true;
    for (const seq of seqs) {
      state.waiting.add(seq);
      this.bySeq.set(seq, state);
    }
  }

  /** What a waiting sequence starts from: the hold's blocks, or undefined when it has none. */
  reusedFor(seq: Sequence): { fromSeqId: string; numBlocks: number } | undefined {
    const state = this.bySeq.get(seq);
    return state ? { fromSeqId: state.hold.holdId, numBlocks: state.hold.blockIds.length } : undefined;
  }

  /** True when the sequence brings its own state slot (it needs none from the pool). */
  bringsSlot(seq: Sequence): boolean {
    return (this.bySeq.get(seq)?.slot ?? null) !== null;
  }

  /**
   * The sequence was admitted with the hold's blocks: it takes the hold's state slot (if
   * any), and the hold is freed once no sample waits on it.
   */
  admitted(seq: Sequence): void {
    const state = this.bySeq.get(seq);
    if (!state) return;
    if (state.slot !== null) {
      seq.stateSlot = state.slot;
      state.slot = null;
    }
    this.leave(seq, state);
  }

  /** A waiting sequence ended before it was admitted. */
  ended(seq: Sequence): void {
    const state = this.bySeq.get(seq);
    if (state) this.leave(seq, state);
  }

  private leave(seq: Sequence, state: HoldState): void {
    this.bySeq.delete(seq);
    state.waiting.delete(seq);
    if (state.waiting.size === 0) this.drop(state);
  }

  private drop(state: HoldState): void {
    this.holds.delete(state.hold.holdId);
    this.blocks.free(state.hold.holdId);
    if (state.slot !== null) this.stateSlots!.give(state.slot);
    state.slot = null;
  }
}
