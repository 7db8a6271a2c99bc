/**
 * One decode rank's connection to a prefill rank, server side: the hello/welcome handshake,
 * then `prefill` jobs run on the engine's `PrefillService` (several at once) and `cancel`.
 * A frame that breaks the protocol closes the connection with a logged reason; a job that
 * throws gets a `failed` frame; a closed connection aborts every job's signal.
 *
 * Peer memory: a hello that offers it (this engine's memory kind, on this host) gets the
 * engine's descriptor in the welcome, and may then ask for peer jobs. A peer job's blocks stay
 * held after its `done` until the decode rank's `release`, a `cancel`, the connection's end,
 * or `peerHoldMs` (logged: a decode rank that never released them).
 */
import type { Socket } from 'node:net';
import type { Logger } from '../../util/logger.js';
import type { KvPeerDescriptor, KvPeerEngine } from '../engineLike.js';
import { FrameWriter } from './FrameWriter.js';
import { FrameDecoder, type WireFrame } from './kvWire.js';
import { clientMessageSchema, parseMessage, pdWireVersion, type HelloMessage, type KvWireLayout, type PrefillMessage } from './kvMessages.js';
import type { PrefillResult, PrefillService } from './PrefillService.js';
import { ServerJob } from './ServerJob.js';

/** A failed job's message is cut to this many characters (it travels in a frame header). */
const maxMessageChars = 16 * 1024;

/** How long a peer job's blocks stay held after its done without the decode rank's release (default). */
export const PEER_HOLD_MS = 60_000;

export interface ServerConnectionOptions {
  rank: number;
  launchId: string;
  layout: KvWireLayout;
  service: PrefillService;
  log: Logger;
  /** Job counters shared by the server's connections. */
  counters: { inFlight: number; prefillsTotal: number; doneTotal: number; failedTotal: number };
  /** This engine's peer memory; absent: never offered (transport tcp, or an engine without it). */
  peer?: KvPeerEngine | undefined;
  /** How long a done peer job's blocks wait for the release (default PEER_HOLD_MS). */
  peerHoldMs?: number;
}

export class ServerConnection {
  private readonly decoder = new FrameDecoder();
  readonly writer: FrameWriter;
  private readonly jobs = new Map<string, ServerJob>();
  private readonly remote: string;
  private greeted = false;
  /** Whether the welcome gave the client this engine's peer descriptor. */
  private peerOffered = false;
  /** Done peer jobs whose blocks wait for the release. */
  private readonly holds = new Map<string, { release: () => void; timer: NodeJS.Timeout }>();
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
      const peer = this.peerFor(message);
      this.peerOffered = peer !== null;
      this.writer.post({ type: 'welcome', version: pdWireVersion, rank: this.opts.rank, layout: this.opts.layout, ...(peer ? { peer } : {}) });
      return;
    }
    if (!this.greeted) return this.refuse(`a ${message.type} before hello`);
    if (message.type === 'cancel' || message.type === 'release') {
      // A job that just finished may be cancelled by a client that has not seen its done yet: ignore it.
      const job = this.jobs.get(message.id);
      this.jobs.delete(message.id);
      job?.abort(`prefill ${message.id} cancelled by the decode rank`);
      this.releaseHold(message.id);
      return;
    }
    this.startJob(message);
  }

  /** The descriptor to offer a hello, or null (not asked for, another host or kind, nothing shareable). */
  private peerFor(hello: HelloMessage): KvPeerDescriptor | null {
    const peer = this.opts.peer;
    const d = peer?.descriptor ?? null;
    if (!hello.peer || !peer || !d) return null;
    if (hello.peer.host !== peer.host || hello.peer.kind !== peer.kind) return null;
    return d;
  }

  private holdFor(id: string, release: () => void): void {
    const ms = this.opts.peerHoldMs ?? PEER_HOLD_MS;
    const timer = setTimeout(() => {
      this.opts.log.warn({ remote: this.remote, id, ms }, 'a peer prefill\'s blocks were not released by the decode rank in time; freeing them');
      this.releaseHold(id);
    }, ms);
    timer.unref();
    this.holds.set(id, { release, timer });
  }

  private releaseHold(id: string): void {
    const hold = this.holds.get(id);
    if (!hold) return;
    this.holds.delete(id);
    clearTimeout(hold.timer);
    hold.release();
  }

  /** Done peer jobs whose blocks are still held (for the decode rank). */
  get heldJobs(): number {
    return this.holds.size;
  }

  private startJob(message: PrefillMessage): void {
    const { id, tokenIds, numBlocks, cacheSalt, peer } = message;
    if (this.jobs.has(id) || this.holds.has(id)) return this.fail(`prefill ${id} is already in flight on this connection`);
    if (peer && !this.peerOffered) {
      this.opts.counters.failedTotal++;
      this.writer.post({ type: 'failed', id, message: 'a peer prefill on a connection whose welcome offered no peer memory' });
      return;
    }
    const needed = numBlocks * this.opts.layout.blockSize;
    if (tokenIds.length < needed) {
      this.opts.counters.failedTotal++;
      this.writer.post({ type: 'failed', id, message: `${numBlocks} blocks of ${this.opts.layout.blockSize} tokens need ${needed} token ids, got ${tokenIds.length}` });
      return;
    }
    const job = new ServerJob({ id, tokenIds, numBlocks, ...(cacheSalt !== undefined ? { cacheSalt } : {}), ...(peer ? { peer } : {}) }, this.opts.layout, this.writer);
    this.jobs.set(id, job);
    void this.runJob(job);
  }

  private async runJob(job: ServerJob): Promise<void> {
    const { counters, log } = this.opts;
    const { id } = job.job;
    counters.inFlight++;
    counters.prefillsTotal++;
    try {
      let result: PrefillResult;
      try {
        result = await this.opts.service.prefill(job.job, job.sink, job.signal);
      } catch (err) {
        if (job.isStopped) return;
        return this.failJob(job, err instanceof Error ? err.message : String(err));
      }
      const release = result.release ?? ((): void => undefined);
      if (job.isStopped) return release();
      const missing = job.missing();
      if (missing) {
        release();
        return this.failJob(job, missing);
      }
      await job.settled();
      if (job.isStopped) return release();
      this.jobs.delete(id);
      // Held for the decode rank's copy until its release (a byte job's blocks are free already).
      if (result.release) this.holdFor(id, result.release);
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
    for (const id of [...this.holds.keys()]) this.releaseHold(id);
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
