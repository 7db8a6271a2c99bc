/**
 * A decode rank's client of one prefill rank: asks it to prefill prompts and receives their
 * KV blocks (and recurrent state) through handlers. One TCP connection carries every job;
 * when it drops, jobs in flight fail with PrefillRankLostError, `onDisconnect` listeners
 * hear of it, and the next `prefill` reconnects (once) before failing. With `peer` (and a
 * transport other than tcp) each connection offers peer memory; its jobs then copy the KV
 * from the prefill rank's memory (`transport` says how the next job goes).
 */
import type { PdTransport } from '@afd/shared';
import type { Logger } from '../../util/logger.js';
import type { KvLayout, KvPeerEngine } from '../engineLike.js';
import { ClientConnection } from './ClientConnection.js';
import type { PrefillHandlers, PrefillTransferResult } from './ClientJob.js';
import { PrefillRankLostError, abortErrorOf } from './errors.js';
import type { KvWireLayout } from './kvMessages.js';
import type { PrefillJob } from './PrefillService.js';

export interface KvTransferClientOptions {
  host: string;
  port: number;
  /** This launch's id: a prefill rank of another launch refuses the connection. */
  launchId: string;
  /** The prefill rank expected at host:port (checked against its welcome). */
  rank: number;
  log: Logger;
  /** Limit on TCP connect plus handshake; default 10 s. */
  connectTimeoutMs?: number;
  /** How the KV travels (default auto); tcp never offers peer memory. */
  transport?: PdTransport;
  /** This engine's peer memory and layout (to offer it); absent: bytes only. */
  peer?: { engine: KvPeerEngine; layout: KvLayout } | undefined;
}

export class KvTransferClient {
  private conn: ClientConnection | null = null;
  private connecting: Promise<ClientConnection> | null = null;
  private firstLayout: KvWireLayout | null = null;
  private closed = false;
  private readonly listeners = new Set<(reason: string) => void>();
  readonly endpoint: string;

  constructor(private readonly opts: KvTransferClientOptions) {
    this.endpoint = `${opts.host}:${opts.port}`;
  }

  /** The prefill rank this client reaches. */
  get rank(): number {
    return this.opts.rank;
  }

  /** Connects and shakes hands (no-op when connected); resolves with the rank's layout. */
  async connect(): Promise<KvWireLayout> {
    return (await this.ensureConnected()).layout;
  }

  get isConnected(): boolean {
    return this.conn?.isOpen ?? false;
  }

  /** How the next job's KV travels: peer memory, or bytes (also while not connected). */
  get transport(): 'peer' | 'tcp' {
    return this.conn?.isOpen ? this.conn.transport : 'tcp';
  }

  /** Why the current connection does not use peer memory; null when it does, or when not connected. */
  get peerProblem(): string | null {
    return this.conn?.isOpen ? this.conn.peerProblem : null;
  }

  /** Jobs in flight on the current connection. */
  get inFlight(): number {
    return this.conn?.inFlight ?? 0;
  }

  /** The layout of the last welcome; null before the first. */
  get layout(): KvWireLayout | null {
    return this.firstLayout;
  }

  /** Calls `listener` with the reason whenever an established connection drops; returns the unsubscribe. */
  onDisconnect(listener: (reason: string) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /**
   * Asks the rank to prefill `job` and hands each received chunk to the handlers; resolves on
   * `done`. Rejects with PrefillRankLostError (connection lost, or no reconnect), with
   * PrefillFailedError (the rank's engine failed), with KvTransferProtocolError (a bad chunk,
   * or a block missing at `done`), with the handlers' own error, or on abort with the
   * signal's reason (an AbortError by default); the last three also cancel the job on the rank.
   */
  async prefill(job: PrefillJob, handlers: PrefillHandlers): Promise<PrefillTransferResult> {
    const { signal } = handlers;
    if (signal?.aborted) throw abortErrorOf(signal, `prefill ${job.id}`);
    let conn: ClientConnection;
    try {
      conn = await this.ensureConnected();
    } catch (err) {
      throw new PrefillRankLostError(`cannot reach prefill rank ${this.opts.rank} for prefill ${job.id}: ${(err as Error).message}`, true, { cause: err });
    }
    if (signal?.aborted) throw abortErrorOf(signal, `prefill ${job.id}`);
    const { layout } = conn;
    if (conn.has(job.id)) throw new Error(`prefill ${job.id} is in flight, or was cancelled, on this connection to prefill rank ${this.opts.rank}: use a new id`);
    if (!Number.isInteger(job.numBlocks) || job.numBlocks < 0) throw new Error(`prefill ${job.id}: numBlocks must be a non-negative integer, got ${job.numBlocks}`);
    if (job.tokenIds.length < job.numBlocks * layout.blockSize) {
      throw new Error(`prefill ${job.id}: ${job.numBlocks} blocks of ${layout.blockSize} tokens need ${job.numBlocks * layout.blockSize} token ids, got ${job.tokenIds.length}`);
    }
    if (layout.stateBytes > 0 && conn.transport === 'peer' && handlers.onBlockRefs && !handlers.onStateRef) {
      throw new Error(`prefill ${job.id}: the prefill rank's model keeps a recurrent state, and no onStateRef handler was given`);
    }
    if (layout.stateBytes > 0 && !handlers.onState) throw new Error(`prefill ${job.id}: the prefill rank's model keeps a recurrent state, and no onState handler was given`);
    return conn.run(job, handlers);
  }

  /** Closes the connection for good; jobs in flight fail with PrefillRankLostError. */
  async close(): Promise<void> {
    this.closed = true;
    const conn = this.conn ?? (await this.connecting?.catch(() => null)) ?? null;
    this.conn = null;
    conn?.close('the client was closed');
  }

  private ensureConnected(): Promise<ClientConnection> {
    if (this.closed) return Promise.reject(new Error(`the client of prefill rank ${this.opts.rank} at ${this.endpoint} is closed`));
    if (this.conn?.isOpen) return Promise.resolve(this.conn);
    if (this.connecting) return this.connecting;
    const { host, port, launchId, rank, log } = this.opts;
    const peer = this.opts.transport === 'tcp' ? undefined : this.opts.peer;
    const opening = ClientConnection.open({ host, port, launchId, rank, log, connectTimeoutMs: this.opts.connectTimeoutMs ?? 10_000, peer }, (c, reason) => this.onLost(c, reason))
      .then((conn) => {
        if (this.firstLayout && JSON.stringify(conn.layout) !== JSON.stringify(this.firstLayout)) {
          conn.close('the layout changed');
          throw new Error(`prefill rank ${rank} at ${this.endpoint} came back with layout ${JSON.stringify(conn.layout)}, not ${JSON.stringify(this.firstLayout)}`);
        }
        if (this.closed) {
          conn.close('the client was closed');
          throw new Error(`the client of prefill rank ${rank} at ${this.endpoint} was closed while connecting`);
        }
        this.firstLayout ??= conn.layout;
        this.conn = conn;
        log.info({ endpoint: this.endpoint, rank }, 'connected to prefill rank');
        return conn;
      })
      .finally(() => {
        this.connecting = null;
      });
    this.connecting = opening;
    return opening;
  }

  private onLost(conn: ClientConnection, reason: string): void {
    if (conn !== this.conn) return;
    this.conn = null;
    if (this.closed) return;
    this.opts.log.warn({ endpoint: this.endpoint, rank: this.opts.rank, reason }, 'lost prefill rank connection');
    for (const listener of this.listeners) listener(reason);
  }
}
