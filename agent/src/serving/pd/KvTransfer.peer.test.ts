// The KV transfer's peer-memory mode over real TCP on 127.0.0.1: the handshake that agrees on
// it, kvref/stateref/release, the prefill rank's hold on a peer job's blocks (released only by
// release, cancel, the connection's end or the timeout), and the client's checks of refs.
import type { Server } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { createLogger } from '../../util/logger.js';
import { KvTransferClient } from './KvTransferClient.js';
import { KvTransferServer } from './KvTransferServer.js';
import { KvTransferProtocolError } from './errors.js';
import { kvChunkBytes, pdWireVersion, type KvWireLayout } from './kvMessages.js';
import type { WireFrame } from './kvWire.js';
import { FakePrefillService, PEER_STATE_SLOT, RawPeer, fakePeerEngine, peerBlockId, rawPrefillRank, sleep, waitFor, type FakeServiceOptions } from './testing/fakePrefill.js';

const log = createLogger('pd-test', 'silent');
const layout: KvWireLayout = { dtype: 'bf16', blockSize: 4, numKvLayers: 2, tensorsPerLayer: 2, rowBytes: 64, stateBytes: 0 };
const withState: KvWireLayout = { ...layout, stateBytes: 96 };
const cleanups: Array<() => Promise<void>> = [];

afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function startServer(l: KvWireLayout, opts: FakeServiceOptions = {}, peerHoldMs?: number, peer = fakePeerEngine()): Promise<{ server: KvTransferServer; service: FakePrefillService; port: number }> {
  const service = new FakePrefillService(l, opts);
  const server = new KvTransferServer({ rank: 0, launchId: 'L1', layout: l, service, log, peer, ...(peerHoldMs !== undefined ? { peerHoldMs } : {}) });
  const port = await server.listen(0, '127.0.0.1');
  cleanups.push(() => server.close());
  return { server, service, port };
}

function client(port: number, peer: ReturnType<typeof fakePeerEngine> | null, l: KvWireLayout = layout, transport: 'auto' | 'tcp' | 'peer' = 'auto'): KvTransferClient {
  const c = new KvTransferClient({ host: '127.0.0.1', port, launchId: 'L1', rank: 0, log, connectTimeoutMs: 2000, transport, peer: peer ? { engine: peer, layout: l } : undefined });
  cleanups.push(() => c.close());
  return c;
}

async function rawPeer(port: number): Promise<RawPeer> {
  const peer = await RawPeer.connect(port);
  cleanups.push(async () => void peer.socket.destroy());
  return peer;
}

const job = (id: string, numBlocks: number, l: KvWireLayout = layout): { id: string; tokenIds: number[]; numBlocks: number } => ({ id, tokenIds: Array.from({ length: numBlocks * l.blockSize }, (_, i) => i), numBlocks });

/** Handlers that copy through the link, keeping what they were told. */
function refs(): { refs: Map<number, number>; slot: number | null; onBlocks: () => void; onState: () => void; onBlockRefs: (o: number, n: number, src: number[], p: { pullKvBlocks(s: Int32Array, d: Int32Array): Promise<void> }) => Promise<void>; onStateRef: (slot: number) => void } {
  const h = {
    refs: new Map<number, number>(),
    slot: null as number | null,
    onBlocks: () => expect.fail('bytes arrived for a peer job'),
    onState: () => expect.fail('state bytes arrived for a peer job'),
    onBlockRefs: async (o: number, n: number, src: number[], p: { pullKvBlocks(s: Int32Array, d: Int32Array): Promise<void> }) => {
      expect(src).toHaveLength(n);
      src.forEach((b, k) => h.refs.set(o + k, b));
      await p.pullKvBlocks(Int32Array.from(src), Int32Array.from(src, (_, k) => o + k));
    },
    onStateRef: (slot: number) => void (h.slot = slot),
  };
  return h;
}

describe('KV transfer in peer memory', () => {
  it('a peer job sends block ids in chunks of at most 256 and the state slot; its hold is released after done', async () => {
    const { server, service, port } = await startServer(withState);
    const local = fakePeerEngine();
    const c = client(port, local, withState);
    await c.connect();
    expect(c.transport).toBe('peer');
    expect(c.peerProblem).toBeNull();
    const h = refs();
    const r = await c.prefill(job('p1', 600, withState), h);
    expect(r).toMatchObject({ transport: 'peer', bytes: kvChunkBytes(withState, 600) + 96 });
    expect([...h.refs.entries()]).toEqual(Array.from({ length: 600 }, (_, b) => [b, peerBlockId(b)]));
    expect(h.slot).toBe(PEER_STATE_SLOT);
    expect(local.pulls.map((p) => ('src' in p ? p.src.length : -1))).toEqual([256, 256, 88]);
    await waitFor(() => service.released.includes('p1'), 'the hold to be released');
    expect(server.stats()).toMatchObject({ doneTotal: 1, heldPeerJobs: 0 });
    expect(server.stats().bytesSent).toBeLessThan(20_000); // ids, not 600 blocks of KV
  });

  it('the hold is released only by release, cancel, the connection closing, or the timeout', async () => {
    const { service, port } = await startServer(layout);
    const hello = { type: 'hello', version: pdWireVersion, launchId: 'L1', peer: { kind: 'cpu', host: 'host-a' } };
    const peer = await rawPeer(port);
    peer.send(hello);
    await waitFor(() => peer.ofType('welcome').length === 1, 'welcome');
    expect(peer.ofType('welcome')[0]!.header.peer).toMatchObject({ kind: 'cpu', host: 'host-a', kv: 'aGFuZGxl' });
    peer.send({ type: 'prefill', ...job('r1', 3), peer: true });
    peer.send({ type: 'prefill', ...job('r2', 3), peer: true });
    await waitFor(() => peer.ofType('done').length === 2, 'both done');
    expect(peer.ofType('kvref', 'r1').map((f) => f.header)).toEqual([{ type: 'kvref', id: 'r1', blockOffset: 0, numBlocks: 3, blockIds: [1000, 1001, 1002] }]);
    await sleep(50);
    expect(service.released).toEqual([]);
    peer.send({ type: 'release', id: 'r1' });
    await waitFor(() => service.released.length === 1, 'r1 released');
    expect(service.released).toEqual(['r1']);
    peer.send({ type: 'cancel', id: 'r2' });
    await waitFor(() => service.released.length === 2, 'r2 released by cancel');
    peer.send({ type: 'release', id: 'r1' }); // twice, or unknown: ignored
    peer.send({ type: 'prefill', ...job('r3', 2), peer: true });
    await waitFor(() => peer.ofType('done', 'r3').length === 1, 'r3 done');
    peer.socket.destroy();
    await waitFor(() => service.released.includes('r3'), 'r3 released by the connection closing');

    const timed = await startServer(layout, {}, 40);
    const late = await rawPeer(timed.port);
    late.send(hello);
    late.send({ type: 'prefill', ...job('t1', 1), peer: true });
    await waitFor(() => late.ofType('done', 't1').length === 1, 't1 done');
    expect(timed.server.stats().heldPeerJobs).toBe(1);
    await waitFor(() => timed.service.released.includes('t1'), 't1 released by the timeout');
    expect(timed.server.stats().heldPeerJobs).toBe(0);
  });

  it('a peer job cancelled mid-way (abort) frees its hold; a closed decode rank too', async () => {
    const { service, port } = await startServer(layout, { chunkBlocks: 2, hangAfterBlocks: 2 });
    const c = client(port, fakePeerEngine());
    const ac = new AbortController();
    const h = refs();
    const pending = c.prefill(job('a1', 8), { ...h, signal: ac.signal });
    await waitFor(() => h.refs.size === 2, 'the first refs');
    ac.abort();
    await expect(pending).rejects.toMatchObject({ name: 'AbortError' });
    await waitFor(() => service.released.includes('a1'), 'a1 released');
    const gone = c.prefill(job('a2', 8), refs()).catch((e: unknown) => e);
    await waitFor(() => service.started.includes('a2'), 'a2 started');
    await c.close();
    await gone;
    await waitFor(() => service.released.includes('a2'), 'a2 released');
  });

  it('no peer memory: not offered, another host, transport tcp, an open that fails, other layouts; jobs go as bytes', async () => {
    const { port } = await startServer(layout);
    const cases: Array<[string, KvTransferClient, RegExp]> = [
      ['none', client(port, null), /offers no peer memory/],
      ['host', client(port, fakePeerEngine({ host: 'host-b' })), /offered no peer memory \(another host or memory kind than cpu on host-b/],
      ['tcp', client(port, fakePeerEngine(), layout, 'tcp'), /offers no peer memory \(transport tcp/],
      ['open', client(port, fakePeerEngine({ failOpen: 'cudaIpcOpenMemHandle: invalid' })), /cannot map prefill rank 0's cpu memory: cudaIpcOpenMemHandle: invalid/],
      ['layout', client(port, fakePeerEngine(), { ...layout, dtype: 'f16' }), /the layouts differ \(dtype bf16 there, f16 here\)/],
    ];
    for (const [what, c, why] of cases) {
      await c.connect();
      expect(c.transport, what).toBe('tcp');
      expect(c.peerProblem, what).toMatch(why);
      let bytes = 0;
      const r = await c.prefill(job(`b-${what}`, 2), { ...refs(), onBlocks: (_o, _n, d) => void (bytes += d.byteLength) });
      expect(r, what).toMatchObject({ transport: 'tcp', bytes: kvChunkBytes(layout, 2) });
      expect(bytes).toBe(kvChunkBytes(layout, 2));
    }
    // A peer prefill on a connection that was offered none fails.
    const raw = await rawPeer(port);
    raw.hello('L1');
    raw.send({ type: 'prefill', ...job('x', 1), peer: true });
    await waitFor(() => raw.ofType('failed', 'x').length === 1, 'failed');
    expect(raw.ofType('failed', 'x')[0]!.header.message).toMatch(/offered no peer memory/);
  });

  it('the client checks refs: count, range, a block twice, done without all, refs for a byte job, a state without one', async () => {
    const seen: WireFrame[] = [];
    const server = await rawPrefillRank(
      layout,
      (peer, id) => {
        const ref = (blockOffset: number, blockIds: number[]): void => peer.send({ type: 'kvref', id, blockOffset, numBlocks: blockIds.length, blockIds });
        if (id === 'count') peer.send({ type: 'kvref', id, blockOffset: 0, numBlocks: 2, blockIds: [5] });
        if (id === 'range') ref(1, [5, 6]);
        if (id === 'twice') [0, 0].forEach((o) => ref(o, [5]));
        if (id === 'missing') ref(0, [5]);
        if (id === 'missing') peer.send({ type: 'done', id, prefillMs: 1, cachedTokens: 0 });
        if (id === 'state') peer.send({ type: 'stateref', id, slot: 1 });
        if (id === 'bytes') ref(0, [5]);
      },
      { welcome: { peer: fakePeerEngine().descriptor }, seen },
    );
    cleanups.push(() => new Promise((resolve) => (server.server as Server).close(() => resolve())));
    const c = client(server.port, fakePeerEngine());
    const run = (id: string): Promise<unknown> => c.prefill(job(id, 2), refs()).catch((e: unknown) => e);
    expect(await run('count')).toMatchObject({ name: 'KvTransferProtocolError', message: 'prefill count: a kvref of 2 blocks names 1 block ids' });
    expect(await run('range')).toMatchObject({ message: 'prefill range: blocks [1, 3) are beyond the 2 asked for' });
    expect(await run('twice')).toMatchObject({ message: 'prefill twice: block 0 arrived twice' });
    expect(await run('missing')).toBeInstanceOf(KvTransferProtocolError);
    expect(await run('state')).toMatchObject({ message: 'prefill state: a state arrived but the layout has none (stateBytes 0)' });
    // A job sent as bytes (its handlers cannot copy) that gets refs.
    const bytesJob = await c.prefill(job('bytes', 2), { onBlocks: () => undefined }).catch((e: unknown) => e);
    expect(bytesJob).toMatchObject({ message: 'prefill bytes: a kvref arrived for a job that asked for bytes' });
    expect(seen.find((f) => f.header.id === 'bytes' && f.header.type === 'prefill')!.header.peer).toBeUndefined();
    // Refs that arrived, then a failure: cancel and release go back.
    await waitFor(() => seen.some((f) => f.header.type === 'release' && f.header.id === 'twice'), 'release of twice');
    expect(seen.some((f) => f.header.type === 'cancel' && f.header.id === 'twice')).toBe(true);
    expect(seen.some((f) => f.header.type === 'release' && f.header.id === 'count')).toBe(false); // nothing arrived
    expect(c.transport).toBe('peer');
  });

  it('a copy that fails fails its job (cancel + release) and the connection goes on with bytes', async () => {
    const { service, port } = await startServer(layout);
    const c = client(port, fakePeerEngine({ failPull: 'cudaMemcpyPeer: illegal address' }));
    await c.connect();
    expect(c.transport).toBe('peer');
    await expect(c.prefill(job('f1', 2), refs())).rejects.toThrow('cudaMemcpyPeer: illegal address');
    await waitFor(() => service.released.includes('f1'), 'f1 released');
    expect(c.transport).toBe('tcp');
    expect(c.peerProblem).toMatch(/a copy from the prefill rank's memory failed: cudaMemcpyPeer: illegal address/);
    await expect(c.prefill(job('f2', 2), { ...refs(), onBlocks: () => undefined })).resolves.toMatchObject({ transport: 'tcp' });
  });
});
