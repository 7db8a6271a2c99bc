/**
 * One connection from a decode rank to a prefill rank, client side: the hello/welcome
 * handshake, then jobs in flight keyed by id. Frames are handled one at a time, in order;
 * while a handler's promise is pending the socket is paused (backpressure to the rank).
 * A job's own violation (or its handler's error) fails that job and cancels it on the rank;
 * a broken frame or a closed socket fails every job with PrefillRankLostError.
 *
 * Peer memory: with `peer` (this engine's, transport not tcp) the hello offers it; a welcome
 * that answers with the prefill engine's descriptor, from a rank whose layout is exactly this
 * engine's, is mapped once (open) before the handshake completes. Jobs then run in peer mode
 * (their handlers copy the blocks), and each one's blocks are released on the prefill rank
 * once copied or given up. When the map fails, or a copy fails, the connection goes on with
 * bytes (`transport` tcp, `peerProblem` says why).
 */
import { connect, type Socket } from 'node:net';
import type { Logger } from '../../util/logger.js';
import type { KvLayout, KvPeerEngine, KvPeerLink } from '../engineLike.js';
import { ClientJob, type PrefillHandlers, type PrefillTransferResult } from './ClientJob.js';
import { PrefillFailedError, PrefillRankLostError, PrefillRankRefusedError, abortErrorOf } from './errors.js';
import { FrameWriter } from './FrameWriter.js';
import { FrameDecoder, WireFrameError, type WireFrame } from './kvWire.js';
import { parseMessage, pdWireVersion, serverMessageSchema, type KvWireLayout, type ServerMessage, type WelcomeMessage } from './kvMessages.js';
import type { PrefillJob } from './PrefillService.js';

export interface ClientConnectionOptions {
  host: string;
  port: number;
  launchId: string;
  /** The prefill rank expected at host:port. */
  rank: number;
  log: Logger;
  connectTimeoutMs: number;
  /** This engine's peer memory and KV layout: offered in the hello. Absent: bytes only. */
  peer?: { engine: KvPeerEngine; layout: KvLayout } | undefined;
}

/** How many cancelled ids a connection remembers (to refuse their reuse). */
const maxCancelledIds = 4096;

interface Entry {
  job: ClientJob;
  resolve: (r: PrefillTransferResult) => void;
  reject: (err: Error) => void;
  cleanup: () => void;
}

export class ClientConnection {
  private readonly decoder = new FrameDecoder();
  private readonly writer: FrameWriter;
  private readonly entries = new Map<string, Entry>();
  private readonly queue: WireFrame[] = [];
  /** Ids cancelled on this connection, oldest first (at most maxCancelledIds). */
  private readonly cancelled = new Set<string>();
  private draining = false;
  private lostReason: string | null = null;
  private handshake: { resolve: (l: KvWireLayout) => void; reject: (err: Error) => void } | null = null;
  private layoutSeen: KvWireLayout | null = null;
  /** The mapped peer memory for new jobs; null: bytes. */
  private peerLink: KvPeerLink | null = null;
  /** The link mapped on this connection (closed with it), even after a failed copy stopped its use. */
  private openedLink: KvPeerLink | null = null;
  private peerWhyNot: string;
  readonly endpoint: string;

  private constructor(
    private readonly socket: Socket,
    private readonly opts: ClientConnectionOptions,
    private readonly onLost: (conn: ClientConnection, reason: string) => void,
  ) {
    this.endpoint = `${opts.host}:${opts.port}`;
    this.writer = new FrameWriter(socket);
    this.peerWhyNot = opts.peer ? 'the handshake is not done' : 'this rank offers no peer memory (transport tcp, or its engine maps none)';
  }

  /** How new jobs move their KV. */
  get transport(): 'peer' | 'tcp' {
    return this.peerLink ? 'peer' : 'tcp';
  }

  /** Why new jobs do not use peer memory; null when they do. */
  get peerProblem(): string | null {
    return this.peerLink ? null : this.peerWhyNot;
  }

  /** Connects and shakes hands; rejects with the rank's refusal or a connect error naming host:port. */
  static open(opts: ClientConnectionOptions, onLost: (conn: ClientConnection, reason: string) => void): Promise<ClientConnection> {
    const socket = connect({ host: opts.host, port: opts.port, noDelay: true });
    const conn = new ClientConnection(socket, opts, onLost);
    return conn.start();
  }

  get layout(): KvWireLayout {
    if (!this.layoutSeen) throw new Error('KV transfer connection has no layout before welcome');
    return this.layoutSeen;
  }

  get isOpen(): boolean {
    return this.lostReason === null && this.layoutSeen !== null;
  }

  get inFlight(): number {
    return this.entries.size;
  }

  /** Whether `id` may not be used now: in flight, or cancelled recently (its last frames may still come). */
  has(id: string): boolean {
    return this.entries.has(id) || this.cancelled.has(id);
  }

  /** Sends the request; resolves on `done` once every chunk went through the handlers. */
  run(job: PrefillJob, handlers: PrefillHandlers): Promise<PrefillTransferResult> {
    return new Promise((resolve, reject) => {
      const { signal } = handlers;
      const onAbort = (): void => {
        if (!signal || !this.entries.has(job.id)) return;
        this.finish(job.id, abortErrorOf(signal, `prefill ${job.id}`), true);
      };
      const cleanup = (): void => signal?.removeEventListener('abort', onAbort);
      const peer = handlers.onBlockRefs ? this.peerLink : null;
      this.entries.set(job.id, { job: new ClientJob(job, this.layout, handlers, peer), resolve, reject, cleanup });
      signal?.addEventListener('abort', onAbort, { once: true });
      const { id, tokenIds, numBlocks, cacheSalt } = job;
      this.writer.send({ type: 'prefill', id, tokenIds, numBlocks, ...(cacheSalt !== undefined ? { cacheSalt } : {}), ...(peer ? { peer: true } : {}) }).catch((err: unknown) => {
        // A closed connection is lose()'s to report; a request the framing refuses (too many token ids) fails here.
        if (err instanceof WireFrameError) this.finish(id, new Error(`prefill ${id} cannot be sent: ${err.message}`), false);
      });
    });
  }

  /** Closes the connection; jobs in flight fail with PrefillRankLostError(reason). */
  close(reason: string): void {
    this.lose(reason);
    this.socket.destroy();
  }

  private start(): Promise<ClientConnection> {
    const { socket, opts } = this;
    return new Promise<ClientConnection>((resolve, reject) => {
      const timer = setTimeout(() => this.close(`no welcome within ${opts.connectTimeoutMs} ms`), opts.connectTimeoutMs);
      this.handshake = {
        resolve: () => {
          clearTimeout(timer);
          resolve(this);
        },
        reject: (err) => {
          clearTimeout(timer);
          reject(err);
        },
      };
      const peer = opts.peer ? { peer: { kind: opts.peer.engine.kind, host: opts.peer.engine.host } } : {};
      socket.on('connect', () => this.writer.post({ type: 'hello', version: pdWireVersion, launchId: opts.launchId, ...peer }));
      socket.on('data', (chunk: Buffer) => this.onData(chunk));
      socket.on('error', (err) => this.lose(err.message));
      socket.on('close', () => this.lose('the connection closed'));
    });
  }

  private onData(chunk: Buffer): void {
    if (this.lostReason !== null) return;
    try {
      this.queue.push(...this.decoder.push(chunk));
    } catch (err) {
      this.close(`malformed frame from the prefill rank: ${(err as Error).message}`);
      return;
    }
    this.drain().catch((err: unknown) => this.close(`internal error handling a frame: ${asError(err).message}`));
  }

  /** Handles queued frames in order; pauses the socket while a handler's promise is pending. */
  private async drain(): Promise<void> {
    if (this.draining) return;
    this.draining = true;
    try {
      for (let frame = this.queue.shift(); frame && this.lostReason === null; frame = this.queue.shift()) {
        const pending = this.onFrame(frame);
        if (pending) {
          this.socket.pause();
          await pending;
        }
      }
    } finally {
      this.draining = false;
      if (this.lostReason === null) this.socket.resume();
    }
  }

  private onFrame(frame: WireFrame): Promise<void> | void {
    const parsed = parseMessage(serverMessageSchema, frame.header, 'server');
    if (!parsed.ok) return this.close(`the prefill rank sent ${parsed.reason}`);
    const m = parsed.message;
    if (this.handshake) return this.onHandshake(m);
    if (m.type === 'welcome' || m.type === 'refused') return this.close(`the prefill rank sent ${m.type} after the handshake`);
    const entry = this.entries.get(m.id);
    if (!entry) {
      // A job cancelled here may still have frames on the way: drop them.
      this.opts.log.debug({ endpoint: this.endpoint, id: m.id, type: m.type }, 'KV transfer frame for a job not in flight');
      return;
    }
    try {
      let pending: Promise<void> | void;
      if (m.type === 'kv') pending = entry.job.onKv(m, frame.payload);
      else if (m.type === 'state') pending = entry.job.onState(m, frame.payload);
      else if (m.type === 'part') pending = entry.job.onPart(m, frame.payload);
      else if (m.type === 'kvref' || m.type === 'stateref') {
        const copied = m.type === 'kvref' ? entry.job.onKvRef(m) : entry.job.onStateRef(m);
        return copied.catch((err: unknown) => {
          this.dropPeer(`a copy from the prefill rank's memory failed: ${asError(err).message}`);
          this.finish(m.id, asError(err), true);
        });
      } else if (m.type === 'failed') return this.finish(m.id, new PrefillFailedError(m.id, m.message), false);
      else return this.finish(m.id, entry.job.onDone(m), false);
      if (pending) return pending.catch((err: unknown) => this.finish(m.id, asError(err), true));
    } catch (err) {
      this.finish(m.id, asError(err), true);
    }
  }

  private onHandshake(m: ServerMessage): Promise<void> | void {
    const hs = this.handshake!;
    this.handshake = null;
    if (m.type === 'refused') {
      hs.reject(new PrefillRankRefusedError(this.endpoint, m.reason));
      return this.close(`refused: ${m.reason}`);
    }
    let problem: string | null = null;
    if (m.type !== 'welcome') problem = `sent ${m.type} before welcome`;
    else if (m.version !== pdWireVersion) problem = `speaks protocol version ${m.version}, not ${pdWireVersion}`;
    else if (m.rank !== this.opts.rank) problem = `is rank ${m.rank}, not the expected rank ${this.opts.rank}`;
    if (problem !== null || m.type !== 'welcome') {
      hs.reject(new Error(`prefill rank at ${this.endpoint} ${problem ?? 'broke the handshake'}`));
      return this.close(`handshake failed: ${problem ?? 'unknown'}`);
    }
    this.layoutSeen = m.layout;
    if (!this.opts.peer) return hs.resolve(m.layout);
    return this.openPeer(m).then(() => {
      if (this.lostReason === null) hs.resolve(m.layout);
      else hs.reject(new Error(`cannot connect to prefill rank ${this.opts.rank} at ${this.endpoint}: ${this.lostReason}`));
    });
  }

  /** Maps the prefill rank's memory the welcome offers, if its layout is exactly ours; else says why not (logged). */
  private async openPeer(m: WelcomeMessage): Promise<void> {
    const { engine, layout } = this.opts.peer!;
    if (!m.peer) {
      this.peerWhyNot = `prefill rank ${this.opts.rank} offered no peer memory (another host or memory kind than ${engine.kind} on ${engine.host}, transport tcp there, or its KV is not shareable)`;
      this.opts.log.info({ endpoint: this.endpoint, reason: this.peerWhyNot }, 'KV transfer over TCP');
      return;
    }
    const differs = (Object.keys(m.layout) as (keyof KvWireLayout)[]).filter((k) => m.layout[k] !== layout[k]);
    if (differs.length > 0) {
      this.peerWhyNot = `the layouts differ (${differs.map((k) => `${k} ${String(m.layout[k])} there, ${String(layout[k])} here`).join('; ')}): blocks cannot be copied as they are`;
      this.opts.log.warn({ endpoint: this.endpoint, reason: this.peerWhyNot }, 'KV transfer over TCP, not peer memory');
      return;
    }
    try {
      const link = await engine.open(m.peer);
      if (this.lostReason !== null) return link.close();
      this.peerLink = this.openedLink = link;
      this.opts.log.info({ endpoint: this.endpoint, kind: m.peer.kind }, 'KV transfer through peer memory');
    } catch (err) {
      this.peerWhyNot = `cannot map prefill rank ${this.opts.rank}'s ${m.peer.kind} memory: ${asError(err).message}`;
      this.opts.log.warn({ endpoint: this.endpoint, reason: this.peerWhyNot }, 'KV transfer over TCP, not peer memory');
    }
  }

  /** A copy failed: later jobs go as bytes (logged once). */
  private dropPeer(reason: string): void {
    if (!this.peerLink) return;
    this.peerLink = null;
    this.peerWhyNot = reason;
    this.opts.log.warn({ endpoint: this.endpoint, reason }, 'peer memory failed; later KV transfers on this connection go over TCP');
  }

  /** Settles job `id` with a result or an error; `cancel` tells the rank to stop it. */
  private finish(id: string, outcome: PrefillTransferResult | Error, cancel: boolean): void {
    const entry = this.entries.get(id);
    if (!entry) return;
    this.entries.delete(id);
    entry.cleanup();
    if (cancel && this.lostReason === null) {
      this.writer.post({ type: 'cancel', id });
      this.cancelled.add(id);
      if (this.cancelled.size > maxCancelledIds) this.cancelled.delete(this.cancelled.values().next().value!);
    }
    // A peer job's blocks are held on the prefill rank until copied (or given up): release them once no copy is in flight.
    if (entry.job.peer && (entry.job.delivered || !(outcome instanceof Error))) {
      void entry.job.idle().then(() => {
        if (this.lostReason === null) this.writer.post({ type: 'release', id });
      });
    }
    if (!(outcome instanceof Error)) entry.resolve(outcome);
    else void entry.job.idle().then(() => entry.reject(outcome)); // the caller frees the copy's (or import's) destination then
  }

  private lose(reason: string): void {
    if (this.lostReason !== null) return;
    this.lostReason = reason;
    this.queue.length = 0;
    this.socket.destroy();
    const link = this.openedLink;
    this.peerLink = this.openedLink = null;
    if (link) {
      // Copies in flight finish first (the prefill rank frees its blocks as the socket closes; ours go with the jobs).
      const copies = [...this.entries.values()].map((e) => e.job.idle());
      void Promise.all(copies).then(() => link.close());
    }
    if (this.handshake) {
      const hs = this.handshake;
      this.handshake = null;
      hs.reject(new Error(`cannot connect to prefill rank ${this.opts.rank} at ${this.endpoint}: ${reason}`));
      return;
    }
    for (const [id, entry] of [...this.entries]) {
      this.entries.delete(id);
      entry.cleanup();
      const nothing = !entry.job.delivered;
      const err = new PrefillRankLostError(`lost prefill rank ${this.opts.rank} at ${this.endpoint} during prefill ${id}: ${reason}`, nothing);
      // A copy or import in flight still writes into the caller's blocks: reject once it is over.
      void entry.job.idle().then(() => entry.reject(err));
    }
    this.onLost(this, reason);
  }
}

function asError(err: unknown): Error {
  return err instanceof Error ? err : new Error(String(err));
}
