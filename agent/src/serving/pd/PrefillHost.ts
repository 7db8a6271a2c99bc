/**
 * A prefill rank's service behind its KV-transfer server: each job's tokens are computed on
 * this rank's serving engine as a prefill-only sequence (ServingEngine.prefillOnly, sharing
 * steps, the prefix cache and the token budget with anything else it serves), then its
 * blocks are read out of the engine chunk by chunk and handed to the connection, the next
 * chunk read while the previous one is sent; the blocks are freed when the last byte is
 * handed over, or when the job fails or is cancelled.
 *
 * A peer job (the decode rank maps this engine's KV on the same host) sends nothing while it
 * prefills (a running prefill may be preempted and its blocks reused while the peer copies):
 * once parked, the engine's writes are fenced, the block ids go out in chunks of at most
 * maxRefBlocks (and the state slot), and the blocks stay held until the connection calls the
 * result's release (the decode rank copied them, gave up, or went away).
 */
import type { KvTransferEngine } from '../engineLike.js';
import type { ServingEngine } from '../ServingEngine.js';
import { maxRefBlocks } from './kvMessages.js';
import type { PrefillJob, PrefillResult, PrefillService, PrefillSink } from './PrefillService.js';

/** Blocks read out of the engine per chunk (64 blocks of 16 tokens: 1,024 tokens). */
export const EXPORT_CHUNK_BLOCKS = 64;

export class PrefillHost implements PrefillService {
  constructor(
    private readonly serving: Pick<ServingEngine, 'prefillOnly'>,
    private readonly engine: KvTransferEngine,
    private readonly chunkBlocks = EXPORT_CHUNK_BLOCKS,
  ) {}

  async prefill(job: PrefillJob, sink: PrefillSink, signal: AbortSignal): Promise<PrefillResult> {
    const { blockSize, stateBytes } = this.engine.kvLayout;
    const numTokens = job.numBlocks * blockSize;
    if (!Number.isInteger(job.numBlocks) || job.numBlocks < 1) throw new Error(`prefill ${job.id}: numBlocks must be a positive integer, got ${job.numBlocks}`);
    if (job.tokenIds.length < numTokens) throw new Error(`prefill ${job.id}: ${job.numBlocks} blocks of ${blockSize} tokens need ${numTokens} tokens, got ${job.tokenIds.length}`);
    if (job.peer) return this.prefillPeer(job, sink, signal);
    const t0 = performance.now();
    const sender = new ChunkSender(this.engine, sink, this.chunkBlocks, signal);
    // Full chunks of a long prompt go out while its later chunks are prefilled.
    const parked = await this.serving.prefillOnly(job.tokenIds.slice(0, numTokens), job.cacheSalt, signal, (ids, numFull, valid) => sender.progress(ids, numFull, valid, false));
    const prefillMs = performance.now() - t0;
    try {
      await sender.progress(parked.blockIds, parked.blockIds.length, () => true, true);
      if (stateBytes > 0) {
        if (parked.stateSlot === null) throw new Error(`prefill ${job.id}: the model keeps recurrent state but the sequence held no state slot`);
        signal.throwIfAborted();
        await sink.state(await this.engine.exportStateSlot(parked.stateSlot));
      }
      return { prefillMs, cachedTokens: parked.cachedTokens };
    } finally {
      parked.release();
    }
  }

  /** A peer job: prefill, fence, send the ids; the blocks stay held for the caller's release (freed here if it fails). */
  private async prefillPeer(job: PrefillJob, sink: PrefillSink, signal: AbortSignal): Promise<PrefillResult> {
    const peer = this.engine.peer;
    if (!peer?.descriptor) throw new Error(`prefill ${job.id}: this prefill rank's KV is not in shareable memory (a peer prefill needs it)`);
    const t0 = performance.now();
    const parked = await this.serving.prefillOnly(job.tokenIds.slice(0, job.numBlocks * this.engine.kvLayout.blockSize), job.cacheSalt, signal);
    const prefillMs = performance.now() - t0;
    try {
      await peer.fence();
      for (let offset = 0; offset < parked.blockIds.length; offset += maxRefBlocks) {
        signal.throwIfAborted();
        await sink.blockRefs(offset, parked.blockIds.slice(offset, offset + maxRefBlocks));
      }
      if (this.engine.kvLayout.stateBytes > 0) {
        if (parked.stateSlot === null) throw new Error(`prefill ${job.id}: the model keeps recurrent state but the sequence held no state slot`);
        await sink.stateRef(parked.stateSlot);
      }
      signal.throwIfAborted();
    } catch (err) {
      parked.release();
      throw err;
    }
    return { prefillMs, cachedTokens: parked.cachedTokens, release: () => parked.release() };
  }
}

/**
 * Sends a job's blocks in order, each once: chunks of `chunkBlocks` as they become full
 * and computed (all that is left once the prompt is done), one export and send at a time,
 * the next chunk read while the previous one is sent. KV read from blocks that were
 * preempted meanwhile is dropped (stillValid), to be read again once recomputed.
 */
class ChunkSender {
  /** Blocks handed to the sink so far. */
  private sent = 0;
  private chain: Promise<void> = Promise.resolve();
  private failure: Error | null = null;

  constructor(
    private readonly engine: KvTransferEngine,
    private readonly sink: PrefillSink,
    private readonly chunkBlocks: number,
    private readonly signal: AbortSignal,
  ) {}

  /** Queues the chunks now sendable; `last`: the whole prompt is done (send the tail too, and wait for all). */
  progress(ids: readonly number[], numFull: number, valid: () => boolean, last: boolean): Promise<void> {
    this.chain = this.chain.then(() => this.sendUpTo(ids, numFull, valid, last));
    const done = this.chain.catch((err: unknown) => {
      this.failure ??= err as Error;
    });
    if (!last) return done;
    return this.chain;
  }

  private async sendUpTo(ids: readonly number[], numFull: number, valid: () => boolean, last: boolean): Promise<void> {
    if (this.failure) throw this.failure;
    const read = (offset: number): Promise<Uint8Array> => this.engine.exportKvBlocks(Int32Array.from(ids.slice(offset, offset + Math.min(this.chunkBlocks, numFull - offset))));
    // Before the end only whole chunks go, so the sink sees few, large frames.
    const limit = last ? numFull : numFull - (numFull % this.chunkBlocks);
    let next: Promise<Uint8Array> | null = this.sent < limit ? read(this.sent) : null;
    while (next) {
      const offset = this.sent;
      const count = Math.min(this.chunkBlocks, limit - offset);
      const data = await next;
      next = offset + count < limit ? read(offset + count) : null;
      next?.catch(() => undefined); // awaited on the next turn; an abort first must not leave it unhandled
      this.signal.throwIfAborted();
      if (!valid()) return; // preempted meanwhile: read again when recomputed
      await this.sink.blocks(offset, count, data);
      this.sent = offset + count;
    }
  }
}
