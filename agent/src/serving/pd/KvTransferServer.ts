/**
 * The prefill rank's KV transfer endpoint: decode ranks connect over TCP, say hello with the
 * launch id, and ask for prefills; the engine (`PrefillService`) runs them and streams each
 * job's KV blocks (and recurrent state) back. Protocol: kvMessages.ts; one connection:
 * ServerConnection.ts.
 */
import { createServer, type Server, type Socket } from 'node:net';
import type { Logger } from '../../util/logger.js';
import type { KvPeerEngine } from '../engineLike.js';
import { kvWireLayoutSchema, type KvWireLayout } from './kvMessages.js';
import type { PrefillService } from './PrefillService.js';
import { ServerConnection } from './ServerConnection.js';

export interface KvTransferServerOptions {
  /** This prefill rank's number, told to clients in `welcome`. */
  rank: number;
  /** The launch this rank belongs to: a client of another launch is refused. */
  launchId: string;
  layout: KvWireLayout;
  service: PrefillService;
  log: Logger;
  /** This engine's peer memory, offered to decode ranks on its host that ask; absent: bytes only. */
  peer?: KvPeerEngine | undefined;
  /** How long a done peer job's blocks wait for the decode rank's release (default 60 s; tests shorten it). */
  peerHoldMs?: number;
}

export interface KvTransferServerStats {
  /** Open connections. */
  connections: number;
  /** Prefills whose engine call has not returned yet (cancelled ones included until they do). */
  inFlight: number;
  /** Prefills started. */
  prefillsTotal: number;
  /** Prefills whose KV was all sent (`done`). */
  doneTotal: number;
  /** Prefills that failed (cancelled ones are neither done nor failed). */
  failedTotal: number;
  /** Bytes written to clients, frame headers included. */
  bytesSent: number;
  /** Done peer prefills whose blocks wait for the decode rank's release. */
  heldPeerJobs: number;
}

export class KvTransferServer {
  private readonly server: Server;
  private readonly connections = new Set<ServerConnection>();
  private readonly counters = { inFlight: 0, prefillsTotal: 0, doneTotal: 0, failedTotal: 0 };
  private closedBytes = 0;
  private closing = false;

  constructor(private readonly opts: KvTransferServerOptions) {
    const layout = kvWireLayoutSchema.safeParse(opts.layout);
    if (!layout.success) throw new Error(`KvTransferServer: invalid layout: ${layout.error.issues[0]?.message ?? 'invalid'}`);
    this.server = createServer((socket) => this.accept(socket));
    this.server.on('error', (err) => opts.log.error({ err: err.message }, 'KV transfer server error'));
  }

  /** Listens on `port` (0 = an ephemeral one) and `host`; resolves with the port bound. */
  listen(port: number, host: string): Promise<number> {
    return new Promise((resolve, reject) => {
      const onError = (err: Error): void => reject(new Error(`KV transfer server cannot listen on ${host}:${port}: ${err.message}`, { cause: err }));
      this.server.once('error', onError);
      this.server.listen(port, host, () => {
        this.server.off('error', onError);
        const address = this.server.address();
        const bound = typeof address === 'object' && address !== null ? address.port : port;
        this.opts.log.info({ host, port: bound, rank: this.opts.rank }, 'KV transfer server listening');
        resolve(bound);
      });
    });
  }

  /** Stops accepting, aborts every prefill in flight and closes every connection. */
  async close(): Promise<void> {
    this.closing = true;
    const stopped = new Promise<void>((resolve) => {
      if (!this.server.listening) return resolve();
      this.server.close(() => resolve());
    });
    const conns = [...this.connections];
    for (const conn of conns) conn.destroy('the prefill rank is closing');
    await Promise.all([stopped, ...conns.map((c) => c.closed)]);
  }

  stats(): KvTransferServerStats {
    let bytesSent = this.closedBytes;
    let heldPeerJobs = 0;
    for (const conn of this.connections) {
      bytesSent += conn.writer.bytesSent;
      heldPeerJobs += conn.heldJobs;
    }
    return { connections: this.connections.size, ...this.counters, bytesSent, heldPeerJobs };
  }

  private accept(socket: Socket): void {
    if (this.closing) {
      socket.destroy();
      return;
    }
    const { rank, launchId, layout, service, log, peer, peerHoldMs } = this.opts;
    const conn = new ServerConnection(socket, { rank, launchId, layout, service, log, counters: this.counters, peer, ...(peerHoldMs !== undefined ? { peerHoldMs } : {}) });
    this.connections.add(conn);
    void conn.closed.then(() => {
      this.connections.delete(conn);
      this.closedBytes += conn.writer.bytesSent;
    });
  }
}
