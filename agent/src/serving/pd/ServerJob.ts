/**
 * One prefill job on the prefill rank's side of a connection: its abort signal and the
 * `PrefillSink` the engine writes to. The sink checks every chunk against the layout (size,
 * range, each block once, the state once) before a byte goes out, and sends one chunk of
 * the job at a time (its frames must not interleave with the job's next chunk). A peer job
 * (PrefillJob.peer) sends block ids and a state slot instead (kvref, stateref), checked the
 * same way; bytes are refused in it, and refs in a byte job.
 */
import type { FrameWriter } from './FrameWriter.js';
import { kvChunkBytes, maxRefBlocks, type KvWireLayout } from './kvMessages.js';
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
      blockRefs: (blockOffset, blockIds) => this.blockRefs(blockOffset, blockIds),
      stateRef: (slot) => this.stateRef(slot),
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
    const problem = this.job.peer ? `prefill ${id} is a peer job: it sends block ids, not bytes` : this.claimBlocks(blockOffset, numBlocks);
    if (problem) return Promise.reject(new Error(problem));
    const expected = kvChunkBytes(this.layout, numBlocks);
    if (data.byteLength !== expected) {
      return Promise.reject(new Error(`prefill ${id}: a chunk of ${numBlocks} blocks must be ${expected} bytes (layout), got ${data.byteLength}`));
    }
    this.markBlocks(blockOffset, numBlocks);
    return this.enqueue((stopped) => this.writer.sendChunk(id, data, (payloadBytes) => ({ type: 'kv', id, blockOffset, numBlocks, totalBytes: data.byteLength, payloadBytes }), stopped));
  }

  private blockRefs(blockOffset: number, blockIds: readonly number[]): Promise<void> {
    const { id } = this.job;
    const numBlocks = blockIds.length;
    let problem = this.job.peer ? this.claimBlocks(blockOffset, numBlocks) : `prefill ${id} is not a peer job: block ids cannot go out for it`;
    if (!problem && numBlocks > maxRefBlocks) problem = `prefill ${id}: a kvref names at most ${maxRefBlocks} blocks, got ${numBlocks}`;
    if (!problem && !blockIds.every((b) => Number.isInteger(b) && b >= 0)) problem = `prefill ${id}: block ids must be non-negative integers`;
    if (problem) return Promise.reject(new Error(problem));
    this.markBlocks(blockOffset, numBlocks);
    return this.enqueue(() => this.writer.send({ type: 'kvref', id, blockOffset, numBlocks, blockIds: [...blockIds] }));
  }

  private state(data: Uint8Array): Promise<void> {
    const { id } = this.job;
    const problem = this.job.peer ? `prefill ${id} is a peer job: it sends the state slot, not bytes` : this.claimState();
    if (problem) return Promise.reject(new Error(problem));
    if (data.byteLength !== this.layout.stateBytes) {
      return Promise.reject(new Error(`prefill ${id}: the state must be ${this.layout.stateBytes} bytes (layout), got ${data.byteLength}`));
    }
    this.stateSent = true;
    return this.enqueue((stopped) => this.writer.sendChunk(id, data, (payloadBytes) => ({ type: 'state', id, totalBytes: data.byteLength, payloadBytes }), stopped));
  }

  private stateRef(slot: number): Promise<void> {
    const { id } = this.job;
    let problem = this.job.peer ? this.claimState() : `prefill ${id} is not a peer job: a state slot cannot go out for it`;
    if (!problem && (!Number.isInteger(slot) || slot < 0)) problem = `prefill ${id}: state slot ${slot} is not a non-negative integer`;
    if (problem) return Promise.reject(new Error(problem));
    this.stateSent = true;
    return this.enqueue(() => this.writer.send({ type: 'stateref', id, slot }));
  }

  /** Why blocks [blockOffset, blockOffset + numBlocks) cannot go out (out of range, or sent before), or null. */
  private claimBlocks(blockOffset: number, numBlocks: number): string | null {
    const { id } = this.job;
    if (!Number.isInteger(blockOffset) || !Number.isInteger(numBlocks) || blockOffset < 0 || numBlocks < 1 || blockOffset + numBlocks > this.job.numBlocks) {
      return `prefill ${id}: blocks [${blockOffset}, ${blockOffset + numBlocks}) are not within the job's ${this.job.numBlocks} blocks`;
    }
    for (let b = blockOffset; b < blockOffset + numBlocks; b++) if (this.blockSent[b]) return `prefill ${id}: block ${b} was already sent`;
    return null;
  }

  private markBlocks(blockOffset: number, numBlocks: number): void {
    this.blockSent.fill(1, blockOffset, blockOffset + numBlocks);
    this.blocksSent += numBlocks;
  }

  private claimState(): string | null {
    const { id } = this.job;
    if (this.layout.stateBytes === 0) return `prefill ${id}: the layout has no recurrent state (stateBytes 0) to send`;
    if (this.stateSent) return `prefill ${id}: the state was already sent`;
    return null;
  }

  private enqueue(send: (stopped: () => boolean) => Promise<void>): Promise<void> {
    const write = this.chain.then(() => {
      if (this.stopped) throw new Error(`prefill ${this.job.id} was cancelled or lost its connection; the chunk was not sent`);
      return send(() => this.stopped);
    });
    this.chain = write.catch(() => undefined);
    return write;
  }
}
