/**
 * A prefill rank's service behind its KV-transfer server: each job's tokens are computed on
 * this rank's serving engine as a prefill-only sequence (ServingEngine.prefillOnly, sharing
 * steps, the prefix cache and the token budget with anything else it serves), then its
 * blocks are read out of the engine chunk by chunk and handed to the connection, the next
 * chunk read while the previous one is sent; the blocks are freed when the last byte is
 * handed over, or when the job fails or is cancelled.
 */
import type { KvTransferEngine } from '../engineLike.js';
import type { ServingEngine } from '../ServingEngine.js';
import type { PrefillJob, PrefillService, PrefillSink } from './PrefillService.js';

/** Blocks read out of the engine per chunk (64 blocks of 16 tokens: 1,024 tokens). */
export const EXPORT_CHUNK_BLOCKS = 64;

export class PrefillHost implements PrefillService {
  constructor(
    private readonly serving: Pick<ServingEngine, 'prefillOnly'>,
    private readonly engine: KvTransferEngine,
    private readonly chunkBlocks = EXPORT_CHUNK_BLOCKS,
  ) {}

  async prefill(job: PrefillJob, sink: PrefillSink, signal: AbortSignal): Promise<{ prefillMs: number; cachedTokens: number }> {
    const { blockSize, stateBytes } = this.engine.kvLayout;
    const numTokens = job.numBlocks * blockSize;
    if (!Number.isInteger(job.numBlocks) || job.numBlocks < 1) throw new Error(`prefill ${job.id}: numBlocks must be a positive integer, got ${job.numBlocks}`);
    if (job.tokenIds.length < numTokens) throw new Error(`prefill ${job.id}: ${job.numBlocks} blocks of ${blockSize} need ${numTokens} tokens, got ${job.tokenIds.length}`);
    const t0 = performance.now();
    const parked = await this.serving.prefillOnly(job.tokenIds.slice(0, numTokens), job.cacheSalt, signal);
    const prefillMs = performance.now() - t0;
    try {
      const ids = parked.blockIds;
      const read = (offset: number): Promise<Uint8Array> => this.engine.exportKvBlocks(Int32Array.from(ids.slice(offset, offset + this.chunkBlocks)));
      let next: Promise<Uint8Array> | null = read(0);
      for (let offset = 0; offset < ids.length; offset += this.chunkBlocks) {
        const data: Uint8Array = await next!;
        next = offset + this.chunkBlocks < ids.length ? read(offset + this.chunkBlocks) : null;
        next?.catch(() => undefined); // awaited on the next turn; a cancel first must not leave it unhandled
        signal.throwIfAborted();
        await sink.blocks(offset, Math.min(this.chunkBlocks, ids.length - offset), data);
      }
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
}
