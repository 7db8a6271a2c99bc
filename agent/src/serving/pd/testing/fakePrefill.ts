/**
 * Test kit for the KV transfer transport: a fake `PrefillService` that "prefills" by sending
 * deterministic bytes (so a receiver can check every block), a raw frame-level client and
 * server to see or break the protocol, and small helpers. A peer job "prefills" by naming
 * blocks `peerBlockId(b)` (and state slot 7), and records when its hold is released.
 */
import { connect, createServer, type Server, type Socket } from 'node:net';
import type { KvPeerEngine, KvPeerLink } from '../../engineLike.js';
import { FrameDecoder, encodeFrame, type WireFrame } from '../kvWire.js';
import { kvChunkBytes, pdWireVersion, type KvWireLayout } from '../kvMessages.js';
import type { PrefillJob, PrefillResult, PrefillService, PrefillSink } from '../PrefillService.js';

/** The prefill-rank block id the fake names for block `b` of a peer job. */
export const peerBlockId = (b: number): number => 1000 + b;
/** The state slot the fake names for a peer job. */
export const PEER_STATE_SLOT = 7;

/** Byte `i` of block `block` of job `id`: what the fake engine sends. */
export function blockByte(id: string, block: number, i: number): number {
  let h = 0;
  for (let c = 0; c < id.length; c++) h = (h * 31 + id.charCodeAt(c)) & 0xff;
  return (h + block * 37 + i * 11 + (i >> 8)) & 0xff;
}

/** The bytes of blocks [blockOffset, blockOffset + numBlocks) of job `id` (blocks concatenated). */
export function fakeBlocks(layout: KvWireLayout, id: string, blockOffset: number, numBlocks: number): Uint8Array {
  const per = kvChunkBytes(layout, 1);
  const out = new Uint8Array(per * numBlocks);
  for (let b = 0; b < numBlocks; b++) for (let i = 0; i < per; i++) out[b * per + i] = blockByte(id, blockOffset + b, i);
  return out;
}

/** The recurrent state the fake engine sends for job `id`. */
export function fakeState(layout: KvWireLayout, id: string): Uint8Array {
  const out = new Uint8Array(layout.stateBytes);
  for (let i = 0; i < out.length; i++) out[i] = blockByte(id, 100_000, i);
  return out;
}

export interface FakeServiceOptions {
  /** Blocks per sink.blocks call (default: all in one). */
  chunkBlocks?: number;
  /** Wait between chunks, ms (default 0). */
  delayMs?: number;
  /** After this many blocks, wait for the abort signal (the job never finishes by itself). */
  hangAfterBlocks?: number;
  /** Throw this message (after hangAfterBlocks' blocks, if given, else at once). */
  failWith?: string;
  /** Send a chunk of this many bytes instead of the right size, first. */
  badChunkBytes?: number;
  /** Called when a chunk's sink promise resolved, with the bytes sent so far for the job. */
  onSent?: (id: string, bytesSent: number) => void;
}

/** A fake engine: records each job's signal and what its sink calls did. */
export class FakePrefillService implements PrefillService {
  readonly signals = new Map<string, AbortSignal>();
  readonly sinkErrors = new Map<string, Error[]>();
  readonly started: string[] = [];
  /** Peer jobs whose hold was released, in order. */
  readonly released: string[] = [];

  constructor(
    private readonly layout: KvWireLayout,
    private readonly opts: FakeServiceOptions = {},
  ) {}

  async prefill(job: PrefillJob, sink: PrefillSink, signal: AbortSignal): Promise<PrefillResult> {
    const { layout, opts } = this;
    this.signals.set(job.id, signal);
    this.started.push(job.id);
    const record = (err: unknown): never => {
      const list = this.sinkErrors.get(job.id) ?? [];
      list.push(err as Error);
      this.sinkErrors.set(job.id, list);
      throw err;
    };
    if (opts.badChunkBytes !== undefined) await sink.blocks(0, 1, new Uint8Array(opts.badChunkBytes)).catch(record);
    if (opts.failWith !== undefined && opts.hangAfterBlocks === undefined) throw new Error(opts.failWith);
    if (job.peer) return this.prefillPeer(job, sink, signal, record);
    const step = opts.chunkBlocks ?? Math.max(1, job.numBlocks);
    let sent = 0;
    for (let b = 0; b < job.numBlocks; b += step) {
      if (opts.hangAfterBlocks !== undefined && b >= opts.hangAfterBlocks) {
        if (opts.failWith !== undefined) throw new Error(opts.failWith);
        await untilAborted(signal);
      }
      const n = Math.min(step, job.numBlocks - b);
      const data = fakeBlocks(layout, job.id, b, n);
      await sink.blocks(b, n, data).catch(record);
      sent += data.byteLength;
      opts.onSent?.(job.id, sent);
      if (opts.delayMs) await sleep(opts.delayMs);
    }
    if (opts.hangAfterBlocks !== undefined) await untilAborted(signal);
    if (layout.stateBytes > 0) await sink.state(fakeState(layout, job.id)).catch(record);
    return { prefillMs: 1.5, cachedTokens: 0 };
  }

  private async prefillPeer(job: PrefillJob, sink: PrefillSink, signal: AbortSignal, record: (err: unknown) => never): Promise<PrefillResult> {
    let released = false;
    const release = (): void => {
      if (released) return;
      released = true;
      this.released.push(job.id);
    };
    try {
      const step = Math.min(this.opts.chunkBlocks ?? 256, 256);
      for (let b = 0; b < job.numBlocks; b += step) {
        if (this.opts.hangAfterBlocks !== undefined && b >= this.opts.hangAfterBlocks) await untilAborted(signal);
        const ids = Array.from({ length: Math.min(step, job.numBlocks - b) }, (_, k) => peerBlockId(b + k));
        await sink.blockRefs(b, ids).catch(record);
        if (this.opts.delayMs) await sleep(this.opts.delayMs);
      }
      if (this.opts.hangAfterBlocks !== undefined) await untilAborted(signal);
      if (this.layout.stateBytes > 0) await sink.stateRef(PEER_STATE_SLOT).catch(record);
    } catch (err) {
      release();
      throw err;
    }
    return { prefillMs: 1.5, cachedTokens: 0, release };
  }
}

/** A peer engine that shares a descriptor (on `host`) and opens links that record each copy; `failOpen` / `failPull` make them fail. */
export function fakePeerEngine(opts: { host?: string; failOpen?: string; failPull?: string } = {}): KvPeerEngine & { pulls: Array<{ src: number[]; dst: number[] } | { srcSlot: number; dstSlot: number }>; closedLinks: number } {
  const host = opts.host ?? 'host-a';
  const engine = {
    kind: 'cpu' as const,
    host,
    descriptor: { kind: 'cpu' as const, host, kv: 'aGFuZGxl', kvBytes: 1 << 20, stateBytes: 0, numKvBlocks: 4096, numStateSlots: 8 },
    pulls: [] as Array<{ src: number[]; dst: number[] } | { srcSlot: number; dstSlot: number }>,
    closedLinks: 0,
    fence: async () => undefined,
    open: async (): Promise<KvPeerLink> => {
      if (opts.failOpen) throw new Error(opts.failOpen);
      return {
        pullKvBlocks: async (src, dst) => {
          if (opts.failPull) throw new Error(opts.failPull);
          engine.pulls.push({ src: [...src], dst: [...dst] });
        },
        pullStateSlot: async (srcSlot, dstSlot) => void engine.pulls.push({ srcSlot, dstSlot }),
        close: () => void engine.closedLinks++,
      };
    },
  };
  return engine;
}

/** Waits for `signal` to abort, then throws its reason. */
export function untilAborted(signal: AbortSignal): Promise<never> {
  return new Promise((_resolve, reject) => {
    if (signal.aborted) return reject(signal.reason as Error);
    signal.addEventListener('abort', () => reject(signal.reason as Error), { once: true });
  });
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Polls `check` until it holds (or throws after `timeoutMs`). */
export async function waitFor(check: () => boolean, what: string, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(5);
  }
}

/** A frame-level peer: sends frames as given, records what comes back. */
export class RawPeer {
  readonly frames: WireFrame[] = [];
  private readonly decoder = new FrameDecoder();
  closed = false;

  constructor(readonly socket: Socket) {
    socket.on('data', (chunk: Buffer) => {
      for (const f of this.decoder.push(chunk)) this.frames.push({ header: f.header, payload: Uint8Array.from(f.payload) });
    });
    socket.on('error', () => undefined);
    socket.on('close', () => (this.closed = true));
  }

  static connect(port: number): Promise<RawPeer> {
    return new Promise((resolve, reject) => {
      const socket = connect({ host: '127.0.0.1', port }, () => resolve(new RawPeer(socket)));
      socket.once('error', reject);
    });
  }

  send(header: object, payload?: Uint8Array): void {
    for (const part of encodeFrame(header, payload)) this.socket.write(part);
  }

  hello(launchId: string): void {
    this.send({ type: 'hello', version: pdWireVersion, launchId });
  }

  ofType(type: string, id?: string): WireFrame[] {
    return this.frames.filter((f) => f.header.type === type && (id === undefined || f.header.id === id));
  }
}

/**
 * A frame-level fake prefill rank: welcomes (with `welcome`'s extra fields, e.g. a peer
 * descriptor), then lets `onPrefill` answer each prefill by hand; every client frame is kept in `seen`.
 */
export function rawPrefillRank(layout: KvWireLayout, onPrefill: (peer: RawPeer, id: string) => void, extra: { welcome?: object; seen?: WireFrame[] } = {}): Promise<{ server: Server; port: number }> {
  const server = createServer((socket) => {
    const peer = new RawPeer(socket);
    socket.on('data', () => {
      while (peer.frames.length > 0) {
        const f = peer.frames.shift()!;
        extra.seen?.push(f);
        if (f.header.type === 'hello') peer.send({ type: 'welcome', version: pdWireVersion, rank: 0, layout, ...extra.welcome });
        if (f.header.type === 'prefill') onPrefill(peer, String(f.header.id));
      }
    });
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve({ server, port: (server.address() as { port: number }).port })));
}
