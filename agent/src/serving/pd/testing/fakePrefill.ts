/**
 * Test kit for the KV transfer transport: a fake `PrefillService` that "prefills" by sending
 * deterministic bytes (so a receiver can check every block), a raw frame-level client and
 * server to see or break the protocol, and small helpers.
 */
import { connect, createServer, type Server, type Socket } from 'node:net';
import { FrameDecoder, encodeFrame, type WireFrame } from '../kvWire.js';
import { kvChunkBytes, pdWireVersion, type KvWireLayout } from '../kvMessages.js';
import type { PrefillJob, PrefillService, PrefillSink } from '../PrefillService.js';

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

  constructor(
    private readonly layout: KvWireLayout,
    private readonly opts: FakeServiceOptions = {},
  ) {}

  async prefill(job: PrefillJob, sink: PrefillSink, signal: AbortSignal): Promise<{ prefillMs: number; cachedTokens: number }> {
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

/** A frame-level fake prefill rank: welcomes, then lets `onPrefill` answer each prefill by hand. */
export function rawPrefillRank(layout: KvWireLayout, onPrefill: (peer: RawPeer, id: string) => void): Promise<{ server: Server; port: number }> {
  const server = createServer((socket) => {
    const peer = new RawPeer(socket);
    socket.on('data', () => {
      while (peer.frames.length > 0) {
        const f = peer.frames.shift()!;
        if (f.header.type === 'hello') peer.send({ type: 'welcome', version: pdWireVersion, rank: 0, layout });
        if (f.header.type === 'prefill') onPrefill(peer, String(f.header.id));
      }
    });
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve({ server, port: (server.address() as { port: number }).port })));
}
