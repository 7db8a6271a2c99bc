/**
 * One prefill job on the prefill rank's side of a connection: its abort signal and the
 * `PrefillSink` the engine writes to. The sink checks every chunk against the layout (size,
 * range, each block once, the state once) before a byte goes out, and sends one chunk of
 * the job at a time (its frames must not interleave with the job's next chunk).
 */
import type { FrameWriter } from './FrameWriter.js';
import { kvChunkBytes, type KvWireLayout } from './kvMessages.js';
import type { PrefillJob, PrefillSink } from './PrefillService.js';

export class ServerJob {
  private readonly controller = new AbortController();
  private readonly blockSent: Uint8Array;
  private blocksSent = 0;
  private stateSent = false;
  private stopped = false;
  /** The job's chunk writes, one after the other. */
  private chain: Promise<void> = Promise.resolve();
  readonly sink: PrefillSink;

  constructor(
    readonly job: PrefillJob,
    private readonly layout: KvWireLayout,
    private readonly writer: FrameWriter,
  ) {
    this.blockSent = new Uint8Array(job.numBlocks);
    this.sink = {
      blocks: (blockOffset, numBlocks, data) => this.blocks(blockOffset, numBlocks, data),
      state: (data) => this.state(data),
    };
  }

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  /** True once the job was cancelled, failed or lost its connection: nothing more goes out for it. */
  get isStopped(): boolean {
    return this.stopped;
  }

  /** Sends nothing more for the job and aborts its signal with `reason`. */
  abort(reason: string): void {
    this.stopped = true;
    if (!this.controller.signal.aborted) this.controller.abort(new DOMException(reason, 'AbortError'));
  }

  /** Sends nothing more for the job (it failed); its signal stays as it is. */
  stop(): void {
    this.stopped = true;
  }

  /** What the engine left unsent, in words; null when every block (and the state) went out. */
  missing(): string | null {
    const gaps: string[] = [];
    if (this.blocksSent < this.job.numBlocks) {
      const first = this.blockSent.indexOf(0);
      gaps.push(`${this.job.numBlocks - this.blocksSent} of ${this.job.numBlocks} blocks (the first is block ${first})`);
    }
    if (this.layout.stateBytes > 0 && !this.stateSent) gaps.push('the recurrent state');
    return gaps.length === 0 ? null : `the engine finished without sending ${gaps.join(' and ')}`;
  }

  /** Resolves when every chunk handed to the sink so far is written (or dropped). */
  settled(): Promise<void> {
    return this.chain;
  }

  private blocks(blockOffset: number, numBlocks: number, data: Uint8Array): Promise<void> {
    const { id } = this.job;
    if (!Number.isInteger(blockOffset) || !Number.isInteger(numBlocks) || blockOffset < 0 || numBlocks < 1 || blockOffset + numBlocks > this.job.numBlocks) {
      return Promise.reject(new Error(`prefill ${id}: blocks [${blockOffset}, ${blockOffset + numBlocks}) are not within the job's ${this.job.numBlocks} blocks`));
    }
    const expected = kvChunkBytes(this.layout, numBlocks);
    if (data.byteLength !== expected) {
      return Promise.reject(new Error(`prefill ${id}: a chunk of ${numBlocks} blocks must be ${expected} bytes (layout), got ${data.byteLength}`));
    }
    for (let b = blockOffset; b < blockOffset + numBlocks; b++) {
      if (this.blockSent[b]) return Promise.reject(new Error(`prefill ${id}: block ${b} was already sent`));
    }
    this.blockSent.fill(1, blockOffset, blockOffset + numBlocks);
    this.blocksSent += numBlocks;
    return this.enqueue(data, (payloadBytes) => ({ type: 'kv', id, blockOffset, numBlocks, totalBytes: data.byteLength, payloadBytes }));
  }

  private state(data: Uint8Array): Promise<void> {
    const { id } = this.job;
    if (this.layout.stateBytes === 0) return Promise.reject(new Error(`prefill ${id}: the layout has no recurrent state (stateBytes 0) to send`));
    if (data.byteLength !== this.layout.stateBytes) {
      return Promise.reject(new Error(`prefill ${id}: the state must be ${this.layout.stateBytes} bytes (layout), got ${data.byteLength}`));
    }
    if (this.stateSent) return Promise.reject(new Error(`prefill ${id}: the state was already sent`));
    this.stateSent = true;
    return this.enqueue(data, (payloadBytes) => ({ type: 'state', id, totalBytes: data.byteLength, payloadBytes }));
  }

  private enqueue(data: Uint8Array, first: (payloadBytes: number) => object): Promise<void> {
    const write = this.chain.then(() => {
      if (this.stopped) throw new Error(`prefill ${this.job.id} was cancelled or lost its connection; the chunk was not sent`);
      return this.writer.sendChunk(this.job.id, data, first, () => this.stopped);
    });
    this.chain = write.catch(() => undefined);
    return write;
  }
}
