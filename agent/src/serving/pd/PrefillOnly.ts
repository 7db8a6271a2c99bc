/**
 * A prefill rank's side of the serving loop: a prompt computed into the KV cache and
 * nothing sampled (a prefill-only Sequence). The scheduler parks the sequence once all of
 * its tokens are in the cache; the promise resolves then with its blocks, which stay held
 * until release(). A failed step, an abort or a shutdown rejects it and frees the blocks.
 * Before that, `onProgress` hears after each step how many of its leading blocks are full
 * and computed: their KV never changes again, so they can be sent while the rest of a long
 * prompt is prefilled in later chunks.
 */
import type { Scheduler } from '../scheduler/Scheduler.js';
import { Sequence } from '../scheduler/Sequence.js';

/** A computed prompt whose KV blocks (and state slot) are held for the caller. */
export interface ParkedPrefill {
  /** Its blocks in token order (all full). */
  blockIds: readonly number[];
  /** Its recurrent-state slot (a model with linear-attention layers), else null. */
  stateSlot: number | null;
  /** Tokens found in this rank's prefix cache instead of computed. */
  cachedTokens: number;
  /** Frees the blocks and the slot; call once the KV is sent (or given up). Safe twice. */
  release(): void;
}

/**
 * After a step: the sequence's first `numFullBlocks` blocks (of `blockIds`) hold computed KV.
 * `stillValid()` turns false once the sequence is preempted (its blocks freed and possibly
 * rewritten): KV read from them after that must be dropped (they are reported again once
 * recomputed).
 */
export type PrefillProgress = (blockIds: readonly number[], numFullBlocks: number, stillValid: () => boolean) => void;

interface Waiter {
  resolve(parked: ParkedPrefill): void;
  reject(err: Error): void;
  onProgress?: PrefillProgress | undefined;
}

export class PrefillOnly {
  private readonly waiters = new Map<Sequence, Waiter>();
  private nextId = 0;

  constructor(
    private readonly scheduler: Scheduler,
    /** The next arrival index (the serving engine's, shared with its requests). */
    private readonly arrival: () => number,
  ) {}

  /** Prefills in progress (queued or running). */
  get size(): number {
    return this.waiters.size;
  }

  /**
   * Queues `promptIds` (a whole number of blocks) as a prefill-only sequence; the caller
   * starts the serving loop. Rejects with the step's error, on abort or when closed.
   */
  submit(promptIds: readonly number[], cacheSalt: string | undefined, signal?: AbortSignal, onProgress?: PrefillProgress): Promise<ParkedPrefill> {
    if (signal?.aborted) return Promise.reject(abortError());
    const seq = new Sequence(`prefill-${this.nextId++}`, promptIds, { temperature: 0, topK: 0, topP: 1, seed: 0 }, { maxTokens: 1, eosTokenIds: [], stopTokenIds: [], ignoreEos: true }, this.arrival(), {}, cacheSalt);
    seq.prefillOnly = true;
    this.scheduler.add(seq);
    return new Promise<ParkedPrefill>((resolve, reject) => {
      const onAbort = (): void => this.fail(seq, abortError());
      signal?.addEventListener('abort', onAbort, { once: true });
      this.waiters.set(seq, {
        onProgress,
        resolve: (p) => {
          signal?.removeEventListener('abort', onAbort);
          resolve(p);
        },
        reject: (e) => {
          signal?.removeEventListener('abort', onAbort);
          reject(e);
        },
      });
    });
  }

  /** A step ran: each prefill-only sequence still running in it reports its full computed blocks. */
  onStep(entries: readonly { seq: Sequence }[]): void {
    for (const { seq } of entries) {
      if (!seq.prefillOnly || seq.status !== 'running') continue;
      const waiter = this.waiters.get(seq);
      if (!waiter?.onProgress) continue;
      const bs = this.scheduler.blocks.kvBlockSize;
      const preemptions = seq.numPreemptions;
      waiter.onProgress([...this.scheduler.blocks.blockTable(seq.id)], Math.floor(seq.numComputedTokens / bs), () => seq.numPreemptions === preemptions && seq.status === 'running');
    }
  }

  /** The scheduler parked these (their prompt is computed): hand them over. */
  onParked(seqs: readonly Sequence[]): void {
    for (const seq of seqs) {
      const waiter = this.waiters.get(seq);
      this.waiters.delete(seq);
      if (!waiter) {
        this.scheduler.finish(seq, 'abort'); // nobody waits (cannot happen): free it
        continue;
      }
      let released = false;
      waiter.resolve({
        blockIds: [...this.scheduler.blocks.blockTable(seq.id)],
        stateSlot: seq.stateSlot,
        cachedTokens: seq.numCachedPromptTokens ?? 0,
        release: () => {
          if (released) return;
          released = true;
          this.scheduler.finish(seq, 'stop');
        },
      });
    }
  }

  /** A step that covered these sequences failed: their prefills fail with it (the scheduler freed them). */
  onFailed(seqs: readonly Sequence[], err: Error): void {
    for (const seq of seqs) {
      const waiter = this.waiters.get(seq);
      if (!waiter) continue;
      this.waiters.delete(seq);
      waiter.reject(new Error(`the prefill step failed: ${err.message}`));
    }
  }

  /** Shutdown: every prefill in progress fails. */
  closeAll(): void {
    for (const seq of [...this.waiters.keys()]) this.fail(seq, new Error('the prefill rank is shutting down'));
  }

  private fail(seq: Sequence, err: Error): void {
    const waiter = this.waiters.get(seq);
    if (!waiter) return;
    this.waiters.delete(seq);
    this.scheduler.finish(seq, 'abort');
    waiter.reject(err);
  }
}

function abortError(): Error {
  const err = new Error('the prefill was cancelled');
  err.name = 'AbortError';
  return err;
}
