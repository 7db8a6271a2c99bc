// The KV transfer transport over real TCP on 127.0.0.1, with a fake engine that sends
// deterministic bytes: round trips, chunking, interleaving, state, backpressure, reconnect.
import { afterEach, describe, expect, it } from 'vitest';
import { createLogger } from '../../util/logger.js';
import { KvTransferClient } from './KvTransferClient.js';
import { KvTransferServer } from './KvTransferServer.js';
import { kvChunkBytes, maxChunkFrameBytes, type KvWireLayout } from './kvMessages.js';
import type { PrefillHandlers } from './ClientJob.js';
import { FakePrefillService, RawPeer, fakeBlocks, fakeState, sleep, waitFor, type FakeServiceOptions } from './testing/fakePrefill.js';

const log = createLogger('pd-test', 'silent');
/** 16 KiB a block. */
const layout: KvWireLayout = { dtype: 'bf16', blockSize: 16, numKvLayers: 2, tensorsPerLayer: 2, rowBytes: 256, stateBytes: 0 };
const blockBytes = kvChunkBytes(layout, 1);
const cleanups: Array<() => Promise<void>> = [];

afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function startServer(l: KvWireLayout, opts: FakeServiceOptions = {}, port = 0): Promise<{ server: KvTransferServer; service: FakePrefillService; port: number }> {
  const service = new FakePrefillService(l, opts);
  const server = new KvTransferServer({ rank: 0, launchId: 'L1', layout: l, service, log });
  const bound = await server.listen(port, '127.0.0.1');
  cleanups.push(() => server.close());
  return { server, service, port: bound };
}

function client(port: number, launchId = 'L1'): KvTransferClient {
  const c = new KvTransferClient({ host: '127.0.0.1', port, launchId, rank: 0, log });
  cleanups.push(() => c.close());
  return c;
}

function job(id: string, numBlocks: number, l: KvWireLayout = layout): { id: string; tokenIds: number[]; numBlocks: number } {
  return { id, tokenIds: Array.from({ length: numBlocks * l.blockSize + 3 }, (_, i) => i), numBlocks };
}

/** Handlers that keep what arrives, and a check that it is exactly what the fake engine sent. */
function collector(l: KvWireLayout = layout): PrefillHandlers & { calls: number; verify: (id: string, numBlocks: number) => void; state: Uint8Array | null } {
  const got = new Map<number, Uint8Array>();
  const per = kvChunkBytes(l, 1);
  const c = {
    calls: 0,
    state: null as Uint8Array | null,
    onBlocks(blockOffset: number, numBlocks: number, data: Uint8Array): void {
      c.calls++;
      expect(data.byteLength).toBe(per * numBlocks);
      for (let b = 0; b < numBlocks; b++) got.set(blockOffset + b, data.slice(b * per, (b + 1) * per));
    },
    onState(data: Uint8Array): void {
      c.state = data.slice();
    },
    verify(id: string, numBlocks: number): void {
      expect(got.size).toBe(numBlocks);
      for (let b = 0; b < numBlocks; b++) expect(Buffer.from(got.get(b)!).equals(Buffer.from(fakeBlocks(l, id, b, 1))), `block ${b} of ${id}`).toBe(true);
    },
  };
  return c;
}

describe('KvTransferServer + KvTransferClient', () => {
  it('connects, prefills and returns every block once, with the engine figures', async () => {
    const { server, port } = await startServer(layout, { chunkBlocks: 3 });
    const c = client(port);
    expect(await c.connect()).toEqual(layout);
    expect(c.isConnected).toBe(true);
    const h = collector();
    const result = await c.prefill(job('j1', 10), h);
    h.verify('j1', 10);
    expect(h.calls).toBe(4);
    expect(result).toMatchObject({ prefillMs: 1.5, cachedTokens: 0, bytes: 10 * blockBytes });
    expect(result.transferMs).toBeGreaterThan(0);
    expect(c.inFlight).toBe(0);
    await waitFor(() => server.stats().inFlight === 0, 'the job to settle on the server');
    const stats = server.stats();
    expect(stats).toMatchObject({ connections: 1, inFlight: 0, prefillsTotal: 1, failedTotal: 0 });
    expect(stats.bytesSent).toBeGreaterThan(10 * blockBytes);
  });

  it('prefills lazily without connect(), and numBlocks 0 is just done', async () => {
    const { port } = await startServer(layout);
    const c = client(port);
    const result = await c.prefill({ id: 'empty', tokenIds: [1, 2], numBlocks: 0 }, collector());
    expect(result.bytes).toBe(0);
  });

  it('splits a chunk over 4 MiB into several frames of at most 4 MiB', async () => {
    const { port } = await startServer(layout);
    const peer = await RawPeer.connect(port);
    cleanups.push(async () => void peer.socket.destroy());
    peer.hello('L1');
    const numBlocks = 600; // 9.4 MiB in one sink call
    peer.send({ type: 'prefill', ...job('big', numBlocks) });
    await waitFor(() => peer.ofType('done').length === 1, 'done');
    const kv = peer.ofType('kv', 'big');
    const parts = peer.ofType('part', 'big');
    expect(kv).toHaveLength(1);
    expect(kv[0]!.header).toMatchObject({ blockOffset: 0, numBlocks, totalBytes: numBlocks * blockBytes, payloadBytes: maxChunkFrameBytes });
    expect(parts.length).toBe(Math.ceil((numBlocks * blockBytes) / maxChunkFrameBytes) - 1);
    for (const f of [...kv, ...parts]) expect(f.payload.byteLength).toBeLessThanOrEqual(maxChunkFrameBytes);
    const whole = Buffer.concat([...kv, ...parts].map((f) => f.payload));
    expect(whole.equals(Buffer.from(fakeBlocks(layout, 'big', 0, numBlocks)))).toBe(true);
  });

  it('interleaves two jobs on one connection and reassembles each exactly', async () => {
    const { port } = await startServer(layout, { chunkBlocks: 400 }); // 6.25 MiB chunks: 2 frames each
    const peer = await RawPeer.connect(port);
    cleanups.push(async () => void peer.socket.destroy());
    peer.hello('L1');
    peer.send({ type: 'prefill', ...job('A', 800) });
    peer.send({ type: 'prefill', ...job('B', 800) });
    await waitFor(() => peer.ofType('done').length === 2, 'both done');
    const order = peer.frames.filter((f) => f.header.type === 'kv' || f.header.type === 'part').map((f) => f.header.id);
    const lastA = order.lastIndexOf('A');
    expect(order.indexOf('B')).toBeLessThan(lastA);

    const c = client(port);
    const [ha, hb] = [collector(), collector()];
    const [ra, rb] = await Promise.all([c.prefill(job('A', 800), ha), c.prefill(job('B', 500), hb)]);
    ha.verify('A', 800);
    hb.verify('B', 500);
    expect(ra.bytes).toBe(800 * blockBytes);
    expect(rb.bytes).toBe(500 * blockBytes);
  });

  it('sends the recurrent state after the blocks when the layout has one', async () => {
    const hybrid: KvWireLayout = { ...layout, stateBytes: 5 * 1024 * 1024 + 7 };
    const { port } = await startServer(hybrid, { chunkBlocks: 2 });
    const c = client(port);
    const h = collector(hybrid);
    const result = await c.prefill(job('h', 5, hybrid), h);
    h.verify('h', 5);
    expect(Buffer.from(h.state!).equals(Buffer.from(fakeState(hybrid, 'h')))).toBe(true);
    expect(result.bytes).toBe(5 * blockBytes + hybrid.stateBytes);
    await expect(c.prefill(job('h2', 1, hybrid), { onBlocks: () => undefined })).rejects.toThrow(/no onState handler/);
  });

  it('completes a 64 MiB transfer to a slow consumer without buffering it all', async () => {
    const wide: KvWireLayout = { ...layout, rowBytes: 4096 }; // 256 KiB a block
    const per = kvChunkBytes(wide, 1);
    let received = 0;
    let maxAhead = 0;
    const { port } = await startServer(wide, {
      chunkBlocks: 4,
      onSent: (_id, sent) => (maxAhead = Math.max(maxAhead, sent - received)),
    });
    const c = client(port);
    const h = collector(wide);
    const onBlocks = h.onBlocks.bind(h);
    h.onBlocks = async (offset, n, data) => {
      await sleep(2);
      onBlocks(offset, n, data);
      received += data.byteLength;
    };
    const result = await c.prefill(job('huge', 256, wide), h);
    expect(result.bytes).toBe(64 * 1024 * 1024);
    expect(received).toBe(256 * per);
    h.verify('huge', 256);
    // Kernel socket buffers and a frame or two may be ahead of the consumer, never most of the transfer.
    expect(maxAhead).toBeLessThan(32 * 1024 * 1024);
  });

  it('reconnects once on the next prefill after the prefill rank restarts', async () => {
    const first = await startServer(layout);
    const c = client(first.port);
    await c.connect();
    const reasons: string[] = [];
    c.onDisconnect((r) => reasons.push(r));
    await first.server.close();
    await waitFor(() => !c.isConnected, 'the client to notice');
    expect(reasons).toHaveLength(1);
    await startServer(layout, {}, first.port);
    const h = collector();
    await c.prefill(job('again', 2), h);
    h.verify('again', 2);
    expect(c.isConnected).toBe(true);
  });
});
