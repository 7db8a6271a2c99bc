// The KV transfer transport when things go wrong: cancel, a prefill rank lost mid-transfer,
// failed jobs, refusals, chunks of the wrong size, broken frames. Real TCP on 127.0.0.1.
import { afterEach, describe, expect, it } from 'vitest';
import type { Server } from 'node:net';
import { createLogger } from '../../util/logger.js';
import { KvTransferClient } from './KvTransferClient.js';
import { KvTransferServer } from './KvTransferServer.js';
import { KvTransferProtocolError, PrefillFailedError, PrefillRankLostError, PrefillRankRefusedError } from './errors.js';
import { kvChunkBytes, type KvWireLayout } from './kvMessages.js';
import { FakePrefillService, RawPeer, fakeBlocks, rawPrefillRank, sleep, waitFor, type FakeServiceOptions } from './testing/fakePrefill.js';

const log = createLogger('pd-test', 'silent');
const layout: KvWireLayout = { dtype: 'f16', blockSize: 4, numKvLayers: 3, tensorsPerLayer: 2, rowBytes: 128, stateBytes: 0 };
const blockBytes = kvChunkBytes(layout, 1);
const cleanups: Array<() => Promise<void>> = [];

afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function startServer(opts: FakeServiceOptions = {}): Promise<{ server: KvTransferServer; service: FakePrefillService; port: number }> {
  const service = new FakePrefillService(layout, opts);
  const server = new KvTransferServer({ rank: 0, launchId: 'L1', layout, service, log });
  const port = await server.listen(0, '127.0.0.1');
  cleanups.push(() => server.close());
  return { server, service, port };
}

function client(port: number, launchId = 'L1'): KvTransferClient {
  const c = new KvTransferClient({ host: '127.0.0.1', port, launchId, rank: 0, log, connectTimeoutMs: 2000 });
  cleanups.push(() => c.close());
  return c;
}

async function rawPeer(port: number): Promise<RawPeer> {
  const peer = await RawPeer.connect(port);
  cleanups.push(async () => void peer.socket.destroy());
  return peer;
}

function rawServer(onPrefill: (peer: RawPeer, id: string) => void): Promise<{ server: Server; port: number }> {
  return rawPrefillRank(layout, onPrefill).then((r) => {
    cleanups.push(() => new Promise((resolve) => r.server.close(() => resolve())));
    return r;
  });
}

const job = (id: string, numBlocks: number): { id: string; tokenIds: number[]; numBlocks: number } => ({
  id,
  tokenIds: Array.from({ length: numBlocks * layout.blockSize }, (_, i) => i),
  numBlocks,
});

describe('KvTransfer faults', () => {
  it('cancel: abort rejects with an AbortError, aborts the engine job and nothing more is sent', async () => {
    const { server, service, port } = await startServer({ chunkBlocks: 1, delayMs: 10 });
    const c = client(port);
    const ac = new AbortController();
    let calls = 0;
    const pending = c.prefill(job('c1', 1000), {
      signal: ac.signal,
      onBlocks: () => {
        if (++calls === 2) ac.abort();
      },
    });
    await expect(pending).rejects.toMatchObject({ name: 'AbortError' });
    expect(c.inFlight).toBe(0);
    await waitFor(() => service.signals.get('c1')?.aborted === true, 'the engine signal to abort');
    await waitFor(() => server.stats().inFlight === 0, 'the engine job to stop');
    const sent = server.stats().bytesSent;
    await sleep(100);
    expect(server.stats().bytesSent).toBe(sent);
    await expect(c.prefill(job('c1', 2), { onBlocks: () => undefined })).rejects.toThrow(/prefill c1 is in flight, or was cancelled.*use a new id/);
    // The connection stays usable.
    await expect(c.prefill(job('c2', 2), { onBlocks: () => undefined })).resolves.toMatchObject({ bytes: 2 * blockBytes });
  });

  it('cancel on the wire: the rank sends no frame for the job afterwards', async () => {
    const { service, port } = await startServer({ chunkBlocks: 1, delayMs: 5 });
    const peer = await rawPeer(port);
    peer.hello('L1');
    peer.send({ type: 'prefill', ...job('w', 10_000) });
    await waitFor(() => peer.ofType('kv', 'w').length >= 3, 'a few chunks');
    peer.send({ type: 'cancel', id: 'w' });
    await waitFor(() => service.signals.get('w')?.aborted === true, 'the engine signal to abort');
    await sleep(30);
    const seen = peer.frames.length;
    await sleep(200);
    expect(peer.frames.length).toBe(seen);
    expect(peer.ofType('done', 'w')).toEqual([]);
    // A cancel for a job that is not in flight is ignored.
    peer.send({ type: 'cancel', id: 'nope' });
    await sleep(20);
    expect(peer.closed).toBe(false);
  });

  it('a rank lost before any chunk: PrefillRankLostError with nothingReceived true, the engine job aborted', async () => {
    const { server, service, port } = await startServer({ hangAfterBlocks: 0 });
    const c = client(port);
    const lost: string[] = [];
    c.onDisconnect((r) => lost.push(r));
    const pending = c.prefill(job('l1', 4), { onBlocks: () => undefined }).catch((e: unknown) => e);
    await waitFor(() => service.started.includes('l1'), 'the engine job to start');
    await server.close();
    const err = await pending;
    expect(err).toBeInstanceOf(PrefillRankLostError);
    expect((err as PrefillRankLostError).nothingReceived).toBe(true);
    expect((err as Error).message).toMatch(/lost prefill rank 0 at 127\.0\.0\.1:\d+ during prefill l1/);
    expect(service.signals.get('l1')?.aborted).toBe(true);
    expect(lost).toHaveLength(1);
    expect(c.isConnected).toBe(false);
    // The next prefill tries to reconnect once, then fails with the connect error.
    const again = await c.prefill(job('l2', 1), { onBlocks: () => undefined }).catch((e: unknown) => e);
    expect(again).toBeInstanceOf(PrefillRankLostError);
    expect((again as Error).message).toMatch(/cannot reach prefill rank 0.*127\.0\.0\.1:\d+/);
  });

  it('a rank lost mid-transfer: PrefillRankLostError with nothingReceived false', async () => {
    const { server, port } = await startServer({ chunkBlocks: 2, hangAfterBlocks: 2 });
    const c = client(port);
    let got = 0;
    const pending = c.prefill(job('l3', 8), { onBlocks: (_o, n) => void (got += n) }).catch((e: unknown) => e);
    await waitFor(() => got === 2, 'the first chunk');
    expect(c.inFlight).toBe(1);
    await server.close();
    const err = await pending;
    expect(err).toBeInstanceOf(PrefillRankLostError);
    expect((err as PrefillRankLostError).nothingReceived).toBe(false);
  });

  it('a socket destroyed after a chunk (or mid-chunk) fails the job with the right nothingReceived', async () => {
    const data = fakeBlocks(layout, 'd', 0, 1);
    const { port } = await rawServer((peer, id) => {
      const kv = { type: 'kv', id, blockOffset: 0, numBlocks: 1, totalBytes: blockBytes, payloadBytes: blockBytes };
      if (id === 'after-chunk') peer.send(kv, data);
      if (id === 'mid-chunk') peer.send({ ...kv, payloadBytes: 100 }, data.subarray(0, 100));
      setTimeout(() => peer.socket.destroy(), 50);
    });
    for (const [id, nothing] of [['after-chunk', false], ['mid-chunk', true]] as const) {
      const c = client(port);
      const err = await c.prefill(job(id, 2), { onBlocks: () => undefined }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(PrefillRankLostError);
      expect((err as PrefillRankLostError).nothingReceived, id).toBe(nothing);
    }
  });

  it('a prompt too long for a frame header fails that prefill with the limit named', async () => {
    const { port } = await startServer();
    const c = client(port);
    const tokenIds = Array.from({ length: 200_000 }, () => 123456);
    await expect(c.prefill({ id: 'long', tokenIds, numBlocks: 1 }, { onBlocks: () => undefined })).rejects.toThrow(/prefill long cannot be sent: .*maxHeaderBytes/);
    expect(c.inFlight).toBe(0);
    await expect(c.prefill(job('ok', 1), { onBlocks: () => undefined })).resolves.toMatchObject({ bytes: blockBytes });
  });

  it('client.close() fails jobs in flight with PrefillRankLostError and aborts them on the rank', async () => {
    const { service, port } = await startServer({ hangAfterBlocks: 0 });
    const c = client(port);
    const pending = c.prefill(job('x', 1), { onBlocks: () => undefined }).catch((e: unknown) => e);
    await waitFor(() => service.started.includes('x'), 'the engine job to start');
    await c.close();
    expect(await pending).toBeInstanceOf(PrefillRankLostError);
    await waitFor(() => service.signals.get('x')?.aborted === true, 'the engine signal to abort');
    await expect(c.prefill(job('y', 1), { onBlocks: () => undefined })).rejects.toThrow(/is closed/);
  });

  it('a rank lost while a chunk is being imported: the job fails only once that import is over (the caller then frees its blocks)', async () => {
    const { port } = await startServer({ chunkBlocks: 1, hangAfterBlocks: 1 });
    const c = client(port);
    let finishImport!: () => void;
    let importDone = false;
    const importing = new Promise<void>((resolve) => (finishImport = resolve));
    const pending = c
      .prefill(job('i', 4), {
        onBlocks: async () => {
          await importing;
          importDone = true;
        },
      })
      .catch((e: unknown) => ({ err: e, importDone }));
    await sleep(50); // the first chunk is in its handler
    await c.close();
    await sleep(50);
    finishImport();
    const outcome = (await pending) as { err: unknown; importDone: boolean };
    expect(outcome.err).toBeInstanceOf(PrefillRankLostError);
    expect(outcome.importDone).toBe(true);
  });

  it('an engine failure arrives as PrefillFailedError with its message', async () => {
    const { server, port } = await startServer({ failWith: 'out of KV blocks' });
    const c = client(port);
    const err = await c.prefill(job('f', 2), { onBlocks: () => undefined }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PrefillFailedError);
    expect((err as PrefillFailedError).rankMessage).toBe('out of KV blocks');
    expect((err as Error).message).toBe('prefill f failed on the prefill rank: out of KV blocks');
    expect(server.stats().failedTotal).toBe(1);
  });

  it('a chunk of the wrong size is refused by the sink: the job fails with the size in the message', async () => {
    const { service, port } = await startServer({ badChunkBytes: blockBytes - 1 });
    const c = client(port);
    await expect(c.prefill(job('s', 2), { onBlocks: () => undefined })).rejects.toThrow(
      new RegExp(`a chunk of 1 blocks must be ${blockBytes} bytes \\(layout\\), got ${blockBytes - 1}`),
    );
    expect(service.sinkErrors.get('s')).toHaveLength(1);
  });

  it('the client checks chunks: wrong size, a block twice, a block missing at done', async () => {
    const data = fakeBlocks(layout, 'z', 0, 1);
    const { port } = await rawServer((peer, id) => {
      if (id === 'size') peer.send({ type: 'kv', id, blockOffset: 0, numBlocks: 1, totalBytes: blockBytes + 1, payloadBytes: blockBytes + 1 }, new Uint8Array(blockBytes + 1));
      const kv = { type: 'kv', id, blockOffset: 0, numBlocks: 1, totalBytes: blockBytes, payloadBytes: blockBytes };
      if (id === 'twice') for (let i = 0; i < 2; i++) peer.send(kv, data);
      if (id === 'missing') peer.send(kv, data);
      if (id === 'missing') peer.send({ type: 'done', id, prefillMs: 1, cachedTokens: 0 });
      if (id === 'range') peer.send({ ...kv, blockOffset: 1 }, data);
    });
    const c = client(port);
    const run = (id: string): Promise<unknown> => c.prefill(job(id, 2), { onBlocks: () => undefined }).catch((e: unknown) => e);
    const size = await run('size');
    expect(size).toBeInstanceOf(KvTransferProtocolError);
    expect((size as Error).message).toMatch(`must be ${blockBytes} bytes (layout), the rank sent ${blockBytes + 1}`);
    expect(await run('twice')).toMatchObject({ message: 'prefill twice: block 0 arrived twice' });
    expect(await run('missing')).toMatchObject({ message: 'prefill missing: done arrived after 1 of 2 blocks (block 1 is missing)' });
    const range = await c.prefill(job('range', 1), { onBlocks: () => undefined }).catch((e: unknown) => e);
    expect(range).toMatchObject({ message: 'prefill range: blocks [1, 2) are beyond the 1 asked for' });
    expect(c.isConnected).toBe(true);
  });

  it('a wrong launch id is refused with the reason', async () => {
    const { port } = await startServer();
    const c = client(port, 'other-launch');
    const err = await c.connect().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PrefillRankRefusedError);
    expect((err as PrefillRankRefusedError).reason).toBe('launch id "other-launch" is not this prefill rank\'s "L1"');
    expect(c.isConnected).toBe(false);
  });

  it('a connect error names host:port', async () => {
    const { server, port } = await startServer();
    await server.close();
    await expect(client(port).connect()).rejects.toThrow(new RegExp(`cannot connect to prefill rank 0 at 127\\.0\\.0\\.1:${port}`));
  });

  it('refuses a prefill before hello, and closes on an unknown message or a malformed frame', async () => {
    const { server, port } = await startServer();
    const early = await rawPeer(port);
    early.send({ type: 'prefill', ...job('e', 1) });
    await waitFor(() => early.closed, 'the connection to close');
    expect(early.ofType('refused')[0]?.header.reason).toBe('a prefill before hello');

    const unknown = await rawPeer(port);
    unknown.hello('L1');
    unknown.send({ type: 'gossip', id: 'g' });
    await waitFor(() => unknown.closed, 'the connection to close');

    const garbage = await rawPeer(port);
    garbage.socket.write(Buffer.from([0xff, 0xff, 0xff, 0xff, 1, 2, 3]));
    await waitFor(() => garbage.closed, 'the connection to close');
    await waitFor(() => server.stats().connections === 0, 'the server to drop them');
  });

  it('fails a prefill with fewer token ids than its blocks need', async () => {
    const { port } = await startServer();
    const peer = await rawPeer(port);
    peer.hello('L1');
    peer.send({ type: 'prefill', id: 'short', tokenIds: [1, 2, 3], numBlocks: 1 });
    await waitFor(() => peer.ofType('failed', 'short').length === 1, 'failed');
    expect(peer.ofType('failed', 'short')[0]!.header.message).toBe('1 blocks of 4 tokens need 4 token ids, got 3');
    const c = client(port);
    await expect(c.prefill({ id: 'short', tokenIds: [1], numBlocks: 1 }, { onBlocks: () => undefined })).rejects.toThrow(/need 4 token ids, got 1/);
  });

  it('an engine that finishes without sending every block fails the job', async () => {
    const service = {
      prefill: async (): Promise<{ prefillMs: number; cachedTokens: number }> => ({ prefillMs: 0, cachedTokens: 0 }),
    };
    const server = new KvTransferServer({ rank: 0, launchId: 'L1', layout, service, log });
    const port = await server.listen(0, '127.0.0.1');
    cleanups.push(() => server.close());
    await expect(client(port).prefill(job('lazy', 3), { onBlocks: () => undefined })).rejects.toThrow(
      'prefill lazy failed on the prefill rank: the engine finished without sending 3 of 3 blocks (the first is block 0)',
    );
  });
});
