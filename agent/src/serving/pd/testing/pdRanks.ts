/**
 * Test kit for prefill/decode disaggregation through serving engines: fake prefill ranks
 * (ServingEngine.prefillOnly behind PrefillHost and KvTransferServer) and decode ranks
 * (RemotePrefiller over KvTransferClient) on FakeEngines that check every KV read by
 * content, over either transport (bytes, or the fakes' peer memory). Each fixture registers
 * its cleanup with the caller's list.
 */
import type { PdTransport } from '@afd/shared';
import { createLogger } from '../../../util/logger.js';
import type { KvPeerEngine, KvTransferEngine } from '../../engineLike.js';
import { ServingEngine, type GenerateParams, type ServingOptions } from '../../ServingEngine.js';
import { FakeEngine, historySampler } from '../../testing/FakeEngine.js';
import { tokenIdsOf } from '../../testing/handleTokens.js';
import { qwenTokenizer } from '../../testing/qwenTokenizer.js';
import { KvTransferClient } from '../KvTransferClient.js';
import { KvTransferServer } from '../KvTransferServer.js';
import { PrefillHost } from '../PrefillHost.js';
import type { PrefillService, PrefillSink } from '../PrefillService.js';
import { RemotePrefiller, type LocalPrefillReason, type PdObserver } from '../RemotePrefiller.js';
import type { PdTransfer } from '../remotePrefill.js';

export const tok = await qwenTokenizer();
export const log = createLogger('pd-test', process.env['PD_TEST_LOG'] ?? 'silent');
export const words = tok.encode(' the cat sat on a mat and then it ran far away over hills', false);
export const story = tok.encode('Tell me a long story about a cat who lived in a big old house by the sea with a dog, a parrot and three goldfish that sang');
export const greedy = { temperature: 0, topK: 0, topP: 1 };

const options = (prefixCaching = false): ServingOptions => ({
  scheduler: { maxNumSeqs: 8, maxNumBatchedTokens: 64, longPrefillTokenThreshold: 24, dbo: { enabled: false, decodeTokenThreshold: 32, prefillTokenThreshold: 512 } },
  maxQueuedRequests: 100,
  prefixCaching,
});

export type EngineOpts = ConstructorParameters<typeof FakeEngine>[0];
export type Cleanups = (() => Promise<void>)[];

export interface Fixture {
  engine: FakeEngine;
  serving: ServingEngine;
}

export class Counts implements PdObserver {
  transfers: PdTransfer[] = [];
  local: LocalPrefillReason[] = [];
  lost: number[] = [];
  onTransfer(t: PdTransfer): void {
    this.transfers.push(t);
  }
  onLocalPrefill(reason: LocalPrefillReason): void {
    this.local.push(reason);
  }
  onRankLost(rank: number): void {
    this.lost.push(rank);
  }
}

/** Fixtures of one transport: 'tcp' (bytes), 'auto' (the fakes' peer memory where it opens) or 'peer' (only that). */
export function pdRanks(cleanups: Cleanups, transport: PdTransport) {
  function fakeRank(engineOpts: EngineOpts = {}, prefixCaching = false): Fixture {
    const engine = new FakeEngine({ kvBlockSize: 4, numKvBlocks: 128, nextToken: historySampler(words), ...engineOpts });
    const serving = new ServingEngine(engine, tok, options(prefixCaching));
    cleanups.push(() => serving.close());
    return { engine, serving };
  }

  /** A prefill rank on an ephemeral port; `wrap` may intercept its service. */
  async function prefillRank(rank: number, engineOpts: EngineOpts = {}, wrap?: (s: PrefillService, server: () => KvTransferServer) => PrefillService, extra: { kvOf?: (kv: KvTransferEngine) => KvTransferEngine; peerHoldMs?: number } = {}): Promise<Fixture & { server: KvTransferServer; port: number }> {
    const f = fakeRank(engineOpts, !engineOpts?.numStateSlots); // prefix caching, where the model allows it
    const kv = extra.kvOf ? extra.kvOf(f.engine.kvTransfer) : f.engine.kvTransfer;
    const { peerHoldMs } = extra;
    const host = new PrefillHost(f.serving, kv, 2);
    let server: KvTransferServer | null = null;
    const peer = transport === 'tcp' ? undefined : kv.peer;
    server = new KvTransferServer({ rank, launchId: 'pd-test', layout: kv.kvLayout, service: wrap ? wrap(host, () => server!) : host, log, peer, ...(peerHoldMs !== undefined ? { peerHoldMs } : {}) });
    const port = await server.listen(0, '127.0.0.1');
    cleanups.push(() => server!.close());
    return { ...f, server, port };
  }

  /** A decode rank reaching `ports`; `kvOf` may replace the engine's KV transfer (a peer that fails, another layout). */
  function decodeRank(ports: { rank: number; port: number }[], engineOpts: EngineOpts = {}, prefixCaching = false, kvOf?: (kv: KvTransferEngine) => KvTransferEngine): Fixture & { counts: Counts; prefiller: RemotePrefiller; links: KvTransferClient[] } {
    const counts = new Counts();
    const engine = new FakeEngine({ kvBlockSize: 4, numKvBlocks: 128, nextToken: historySampler(words), ...engineOpts });
    const kv = kvOf ? kvOf(engine.kvTransfer) : engine.kvTransfer;
    const peer = kv.peer ? { engine: kv.peer, layout: kv.kvLayout } : undefined;
    const links = ports.map(({ rank, port }) => new KvTransferClient({ host: '127.0.0.1', port, launchId: 'pd-test', rank, log, connectTimeoutMs: 2000, transport, peer }));
    cleanups.push(async () => links.forEach((l) => void l.close()));
    const remotePrefill = new RemotePrefiller({ links, engine: kv, minPromptTokens: 8, log, observer: counts, transport });
    const serving = new ServingEngine(engine, tok, { ...options(prefixCaching), remotePrefill });
    cleanups.push(() => serving.close());
    return { engine, serving, counts, prefiller: remotePrefill, links };
  }

  return { fakeRank, prefillRank, decodeRank };
}

export const run = async (serving: ServingEngine, params: GenerateParams): Promise<number[][]> => Promise.all((await serving.submitAllAsync([params])).map(tokenIdsOf));

/** The first position each sequence's first step computed, over the engine's plans (0 = it prefilled from the start). */
export const firstPositions = (engine: FakeEngine): number[] => engine.plans.flatMap((p) => Array.from({ length: p.numSeqs }, (_, i) => p.positions[p.tokenOffsets[i]!]!));

/** A sink that calls `after` once each chunk (bytes or block ids) of a job has gone out. */
export function tapSink(sink: PrefillSink, after: () => Promise<void> | void): PrefillSink {
  return {
    ...sink,
    blocks: async (off, n, data) => {
      await sink.blocks(off, n, data);
      await after();
    },
    blockRefs: async (off, ids) => {
      await sink.blockRefs(off, ids);
      await after();
    },
  };
}

/** `kv` with a peer whose open rejects with `reason`. */
export function unopenablePeer(kv: KvTransferEngine, reason: string): KvTransferEngine {
  const peer: KvPeerEngine = { kind: kv.peer!.kind, host: kv.peer!.host, descriptor: null, fence: async () => undefined, open: () => Promise.reject(new Error(reason)) };
  return withPeer(kv, peer);
}

/** `kv` with another peer. */
export function withPeer(kv: KvTransferEngine, peer: KvPeerEngine): KvTransferEngine {
  return {
    kvLayout: kv.kvLayout,
    exportKvBlocks: (ids) => kv.exportKvBlocks(ids),
    importKvBlocks: (ids, data) => kv.importKvBlocks(ids, data),
    exportStateSlot: (slot) => kv.exportStateSlot(slot),
    importStateSlot: (slot, data) => kv.importStateSlot(slot, data),
    peer,
  };
}

/**
 * Another layout over the same KV, converted losslessly by the byte path: the prefill side
 * exports each byte as an f32 (`widen`), the decode side takes bf16 (integers to 255 are
 * exact in bf16) and narrows them back. Layouts differ (f32 x4 vs bf16 x2 the row bytes), so
 * peer memory is not used; bytes still arrive exactly.
 */
export function widen(kv: KvTransferEngine): KvTransferEngine {
  const l = kv.kvLayout;
  return { ...withPeer(kv, kv.peer!), kvLayout: { ...l, dtype: 'f32', rowBytes: l.rowBytes * 4 }, exportKvBlocks: async (ids) => new Uint8Array(Float32Array.from(await kv.exportKvBlocks(ids)).buffer) };
}

export function narrow(kv: KvTransferEngine): KvTransferEngine {
  const l = kv.kvLayout;
  return {
    ...withPeer(kv, kv.peer!),
    kvLayout: { ...l, dtype: 'bf16', rowBytes: l.rowBytes * 2 },
    importKvBlocks: (ids, data) => {
      const u16 = new Uint16Array(data.buffer, data.byteOffset, data.byteLength / 2);
      const f32 = new Float32Array(1);
      const u32 = new Uint32Array(f32.buffer);
      return kv.importKvBlocks(ids, Uint8Array.from(u16, (h) => ((u32[0] = h << 16), f32[0]!)));
    },
  };
}
