/**
 * A TCP relay that delays every byte by a fixed one-way time, in both directions or in one
 * (`direction`): what a slow link does to a connection, where the kernel's netem qdisc is
 * not available. One delayed direction shows whether a per-direction time is really one
 * direction's. Each
 * chunk read from one side is written to the other `delayMs` after it arrived, in order
 * (an end of stream is delayed the same way); Nagle is off on both sockets so nothing
 * else waits. The achieved delay is measured per chunk (timers fire late by up to about
 * a millisecond), so a caller can compare a slowdown with what the link really added.
 */
import { createServer, connect, type Server, type Socket } from 'node:net';

export interface DelayRelayOptions {
  /** Address to listen on. */
  listenHost: string;
  /** Address to forward to. */
  targetHost: string;
  /** Ports: each listens on listenHost:port and forwards to targetHost:port. */
  ports: readonly number[];
  /** One-way delay, ms (changeable later with setDelayMs). */
  delayMs: number;
  /** Which way the delay applies (default both): to-target = client -> target only, from-target = target -> client only. */
  direction?: RelayDirection;
}

/** Which way a relay delays bytes. */
export type RelayDirection = 'both' | 'to-target' | 'from-target';
export const RELAY_DIRECTIONS: readonly RelayDirection[] = ['both', 'to-target', 'from-target'];

export interface DelayRelayStats {
  connections: number;
  chunks: number;
  bytes: number;
  /** Mean achieved delay per chunk of the delayed direction(s) (arrival to write), microseconds. */
  meanDelayUs: number;
  /** Largest achieved delay, microseconds. */
  maxDelayUs: number;
}

const nowUs = (): number => Number(process.hrtime.bigint() / 1000n);
/** Above this many queued bytes the reading side is paused until the line drains. */
const highWaterBytes = 8 << 20;

/** One direction of one connection. */
class DelayLine {
  private readonly queue: { dueUs: number; arrivedUs: number; chunk: Buffer | null }[] = [];
  private timer: NodeJS.Timeout | undefined;
  private queuedBytes = 0;
  private waitingDrain = false;

  constructor(
    private readonly from: Socket,
    private readonly to: Socket,
    private readonly relay: DelayRelay,
    /** False: this direction passes bytes on at once (the relay delays the other one only). */
    private readonly delayed: boolean,
  ) {
    from.on('data', (chunk: Buffer) => this.push(chunk));
    from.on('end', () => this.push(null));
    to.on('drain', () => {
      this.waitingDrain = false;
      this.flush();
    });
  }

  private push(chunk: Buffer | null): void {
    const t = nowUs();
    const delayMs = this.delayed ? this.relay.delayMs : 0;
    this.queue.push({ arrivedUs: t, dueUs: t + delayMs * 1000, chunk });
    if (chunk) {
      this.queuedBytes += chunk.length;
      if (this.queuedBytes > highWaterBytes) this.from.pause();
    }
    // No delay: pass it on now, not a timer tick later (timers add about a millisecond).
    if (delayMs === 0) this.flush();
    else this.schedule();
  }

  private schedule(): void {
    if (this.timer || this.waitingDrain || this.queue.length === 0) return;
    const waitMs = Math.max(0, Math.ceil((this.queue[0]!.dueUs - nowUs()) / 1000));
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.flush();
    }, waitMs);
  }

  private flush(): void {
    const t = nowUs();
    while (this.queue.length > 0 && this.queue[0]!.dueUs <= t && !this.waitingDrain) {
      const item = this.queue.shift()!;
      if (this.delayed) this.relay.noteChunk(item.chunk?.length ?? 0, t - item.arrivedUs);
      if (item.chunk === null) {
        this.to.end();
        continue;
      }
      this.queuedBytes -= item.chunk.length;
      if (this.queuedBytes <= highWaterBytes) this.from.resume();
      if (!this.to.write(item.chunk)) this.waitingDrain = true;
    }
    this.schedule();
  }

  close(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.queue.length = 0;
  }
}

export class DelayRelay {
  private readonly servers: Server[] = [];
  private readonly sockets = new Set<Socket>();
  private readonly lines = new Set<DelayLine>();
  private statsValue = { connections: 0, chunks: 0, bytes: 0, delaySumUs: 0, maxDelayUs: 0 };
  delayMs: number;

  private constructor(private readonly opts: DelayRelayOptions) {
    if (!(opts.delayMs >= 0 && opts.delayMs <= 10_000)) throw new Error(`delayMs must be 0..10000, got ${opts.delayMs}`);
    if (opts.direction !== undefined && !RELAY_DIRECTIONS.includes(opts.direction)) {
      throw new Error(`direction must be one of ${RELAY_DIRECTIONS.join(', ')}, got ${String(opts.direction)}`);
    }
    this.delayMs = opts.delayMs;
  }

  /** Listens on every port; rejects naming the port that could not be bound. */
  static async start(opts: DelayRelayOptions): Promise<DelayRelay> {
    if (opts.ports.length === 0) throw new Error('DelayRelay needs at least one port');
    const relay = new DelayRelay(opts);
    try {
      for (const port of opts.ports) relay.servers.push(await relay.listen(port));
    } catch (e) {
      await relay.close();
      throw e;
    }
    return relay;
  }

  private listen(port: number): Promise<Server> {
    // Half-open: a FIN is passed on after the delay, not answered at once.
    const server = createServer({ allowHalfOpen: true }, (client) => this.accept(client, port));
    return new Promise((resolve, reject) => {
      server.once('error', (e) => reject(new Error(`delay relay cannot listen on ${this.opts.listenHost}:${port}: ${e.message}`)));
      server.listen({ host: this.opts.listenHost, port }, () => resolve(server));
    });
  }

  private accept(client: Socket, port: number): void {
    this.statsValue.connections += 1;
    const upstream = connect({ host: this.opts.targetHost, port, allowHalfOpen: true });
    for (const s of [client, upstream]) {
      s.setNoDelay(true);
      this.sockets.add(s);
    }
    const direction = this.opts.direction ?? 'both';
    const lines = [
      new DelayLine(client, upstream, this, direction !== 'from-target'),
      new DelayLine(upstream, client, this, direction !== 'to-target'),
    ];
    for (const l of lines) this.lines.add(l);
    const drop = (): void => {
      for (const l of lines) {
        l.close();
        this.lines.delete(l);
      }
      client.destroy();
      upstream.destroy();
      this.sockets.delete(client);
      this.sockets.delete(upstream);
    };
    // A reset or a failed connect on either side resets the other (as a dead peer would).
    client.on('error', drop);
    upstream.on('error', drop);
    // A socket that closed cleanly: let what is still on the line reach the other side first.
    const later = (): void => void setTimeout(drop, this.delayMs + 50).unref();
    client.on('close', later);
    upstream.on('close', later);
  }

  /** Called by each line for every chunk it writes. */
  noteChunk(bytes: number, delayUs: number): void {
    const s = this.statsValue;
    s.chunks += 1;
    s.bytes += bytes;
    s.delaySumUs += delayUs;
    if (delayUs > s.maxDelayUs) s.maxDelayUs = delayUs;
  }

  setDelayMs(ms: number): void {
    if (!(ms >= 0 && ms <= 10_000)) throw new Error(`delayMs must be 0..10000, got ${ms}`);
    this.delayMs = ms;
  }

  /** Achieved delays since the last reset. */
  stats(): DelayRelayStats {
    const s = this.statsValue;
    return { connections: s.connections, chunks: s.chunks, bytes: s.bytes, meanDelayUs: s.chunks ? Math.round(s.delaySumUs / s.chunks) : 0, maxDelayUs: s.maxDelayUs };
  }

  resetStats(): void {
    this.statsValue = { connections: this.statsValue.connections, chunks: 0, bytes: 0, delaySumUs: 0, maxDelayUs: 0 };
  }

  async close(): Promise<void> {
    for (const l of this.lines) l.close();
    for (const s of this.sockets) s.destroy();
    await Promise.all(this.servers.map((s) => new Promise<void>((r) => s.close(() => r()))));
  }
}
