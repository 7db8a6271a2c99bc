/**
 * One decode rank's connection to a prefill rank, server side: the hello/welcome handshake,
 * then `prefill` jobs run on the engine's `PrefillService` (several at once) and `cancel`.
 * A frame that breaks the protocol closes the connection with a logged reason; a job that
 * throws gets a `failed` frame; a closed connection aborts every job's signal.
 */
import type { Socket } from 'node:net';
import type { Logger } from '../../util/logger.js';
import { FrameWriter } from './FrameWriter.js';
import { FrameDecoder, type WireFrame } from './kvWire.js';
import { clientMessageSchema, parseMessage, pdWireVersion, type KvWireLayout, type PrefillMessage } from './kvMessages.js';
import type { PrefillService } from './PrefillService.js';
import { ServerJob } from './ServerJob.js';

/** A failed job's message is cut to this many characters (it travels in a frame header). */
const maxMessageChars = 16 * 1024;

export interface ServerConnectionOptions {
  rank: number;
  launchId: string;
  layout: KvWireLayout;
  service: PrefillService;
  log: Logger;
  /** Job counters shared by the server's connections. */
  counters: { inFlight: number; prefillsTotal: number; doneTotal: number; failedTotal: number };
}

export class ServerConnection {
  private readonly decoder = new FrameDecoder();
  readonly writer: FrameWriter;
  private readonly jobs = new Map<string, ServerJob>();
  private readonly remote: string;
  private greeted = false;
  /** Set once the connection is being closed: later frames are ignored. */
  private closing = false;
  /** Resolves when the socket has closed. */
  readonly closed: Promise<void>;

  constructor(
    private readonly socket: Socket,
    private readonly opts: ServerConnectionOptions,
  ) {
    this.remote = `${socket.remoteAddress ?? '?'}:${socket.remotePort ?? '?'}`;
    this.writer = new FrameWriter(socket);
    socket.setNoDelay(true);
    this.closed = new Promise((resolve) => socket.once('close', () => resolve()));
    socket.on('data', (chunk: Buffer) => this.onData(chunk));
    socket.on('error', (err) => opts.log.debug({ remote: this.remote, err: err.message }, 'KV transfer connection error'));
    socket.on('close', () => this.abortAll('the connection closed'));
  }

  /** Aborts every job and destroys the socket (the server is closing). */
  destroy(reason: string): void {
    this.closing = true;
    this.abortAll(reason);
    this.socket.destroy();
  }

  private onData(chunk: Buffer): void {
    if (this.closing) return;
    let frames: WireFrame[];
    try {
      frames = this.decoder.push(chunk);
    } catch (err) {
      this.fail(`malformed frame: ${(err as Error).message}`);
      return;
    }
    for (const frame of frames) {
      if (this.closing) return;
      try {
        this.onFrame(frame);
      } catch (err) {
        this.fail(`internal error handling a ${String(frame.header.type)} frame: ${(err as Error).message}`);
      }
    }
  }

  private onFrame(frame: WireFrame): void {
    const parsed = parseMessage(clientMessageSchema, frame.header, 'client');
    if (!parsed.ok) return this.fail(parsed.reason);
    const message = parsed.message;
    if (message.type === 'hello') {
      if (this.greeted) return this.fail('a second hello on one connection');
      if (message.version !== pdWireVersion) return this.refuse(`protocol version ${message.version} is not this prefill rank's ${pdWireVersion}`);
      if (message.launchId !== this.opts.launchId) {
        return this.refuse(`launch id ${JSON.stringify(message.launchId)} is not this prefill rank's ${JSON.stringify(this.opts.launchId)}`);
      }
      this.greeted = true;
      this.writer.post({ type: 'welcome', version: pdWireVersion, rank: this.opts.rank, layout: this.opts.layout });
      return;
    }
    if (!this.greeted) return this.refuse(`a ${message.type} before hello`);
    if (message.type === 'cancel') {
      // A job that just finished may be cancelled by a client that has not seen its done yet: ignore it.
      const job = this.jobs.get(message.id);
      this.jobs.delete(message.id);
      job?.abort(`prefill ${message.id} cancelled by the decode rank`);
      return;
    }
    this.startJob(message);
  }

  private startJob(message: PrefillMessage): void {
    const { id, tokenIds, numBlocks, cacheSalt } = message;
    if (this.jobs.has(id)) return this.fail(`prefill ${id} is already in flight on this connection`);
    const needed = numBlocks * this.opts.layout.blockSize;
    if (tokenIds.length < needed) {
      this.opts.counters.failedTotal++;
      this.writer.post({ type: 'failed', id, message: `${numBlocks} blocks of ${this.opts.layout.blockSize} tokens need ${needed} token ids, got ${tokenIds.length}` });
      return;
    }
    const job = new ServerJob({ id, tokenIds, numBlocks, ...(cacheSalt !== undefined ? { cacheSalt } : {}) }, this.opts.layout, this.writer);
    this.jobs.set(id, job);
    void this.runJob(job);
  }

  private async runJob(job: ServerJob): Promise<void> {
    const { counters, log } = this.opts;
    const { id } = job.job;
    counters.inFlight++;
    counters.prefillsTotal++;
    try {
      let result: { prefillMs: number; cachedTokens: number };
      try {
        result = await this.opts.service.prefill(job.job, job.sink, job.signal);
      } catch (err) {
        if (job.isStopped) return;
        return this.failJob(job, err instanceof Error ? err.message : String(err));
      }
      if (job.isStopped) return;
      const missing = job.missing();
      if (missing) return this.failJob(job, missing);
      await job.settled();
      if (job.isStopped) return;
      this.jobs.delete(id);
      counters.doneTotal++;
      this.writer.post({ type: 'done', id, prefillMs: result.prefillMs, cachedTokens: result.cachedTokens });
    } catch (err) {
      log.error({ remote: this.remote, id, err: (err as Error).message }, 'KV transfer job broke');
    } finally {
      counters.inFlight--;
    }
  }

  private failJob(job: ServerJob, message: string): void {
    job.stop();
    this.jobs.delete(job.job.id);
    this.opts.counters.failedTotal++;
    this.opts.log.warn({ remote: this.remote, id: job.job.id, err: message }, 'prefill failed');
    this.writer.post({ type: 'failed', id: job.job.id, message: message.length > maxMessageChars ? `${message.slice(0, maxMessageChars)}…` : message });
  }

  private abortAll(reason: string): void {
    for (const job of this.jobs.values()) job.abort(reason);
    this.jobs.clear();
  }

  /** Tells the client why, then closes (version or launch id mismatch, a request before hello). */
  private refuse(reason: string): void {
    this.opts.log.warn({ remote: this.remote, reason }, 'refusing a KV transfer connection');
    this.closing = true;
    this.writer.post({ type: 'refused', reason });
    this.socket.end();
    setTimeout(() => this.socket.destroy(), 2000).unref();
  }

  /** Closes a connection that broke the protocol. */
  private fail(reason: string): void {
    this.opts.log.warn({ remote: this.remote, reason }, 'closing a KV transfer connection that broke the protocol');
    this.closing = true;
    this.abortAll(`the connection broke the protocol: ${reason}`);
    this.socket.destroy();
  }
}
