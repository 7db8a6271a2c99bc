/**
 * Prefill/decode disaggregation in a role process (topologies wPxAyF):
 * - a prefill rank serves prefills to the attention ranks on its KV-transfer port
 *   (afd.pd.port + rank, bound like an FFN rank's rendezvous port), each computed by its own
 *   serving engine as a prefill-only sequence;
 * - an attention rank reaches every prefill rank (prefillHosts[p], else host, at
 *   afd.pd.port + p) and prefills long prompts there (RemotePrefiller).
 * Both ends pass the launch's rendezvous id, so a rank of another launch (or an earlier
 * start) on the same ports is refused. Unless afd.pd.transport is tcp, ranks on one host
 * move the KV through peer memory (the engines map the prefill rank's cache; only block ids
 * go over the socket); with transport peer a link that cannot is not used.
 */
import { prefillRanksOf, type PdStats, type RankConfig } from '@afd/shared';
import type { Logger } from '../util/logger.js';
import type { EngineLike, KvTransferEngine } from '../serving/engineLike.js';
import { KvTransferClient } from '../serving/pd/KvTransferClient.js';
import { KvTransferServer } from '../serving/pd/KvTransferServer.js';
import { PdLinkBook, servedPdStats } from '../serving/pd/PdStatsBook.js';
import { PrefillHost } from '../serving/pd/PrefillHost.js';
import { RemotePrefiller } from '../serving/pd/RemotePrefiller.js';
import type { ServingEngine } from '../serving/ServingEngine.js';

/** The engine's KV transfer, or an error saying why this rank cannot take part. */
function transferOf(engine: EngineLike, what: string): KvTransferEngine {
  if (!engine.kvTransfer) throw new Error(`${what}: this engine cannot read or write its KV blocks (prefill/decode disaggregation needs the native engine)`);
  return engine.kvTransfer;
}

/** A prefill rank's KV-transfer server, listening; its stats as RankStats.pd. */
export interface PrefillServing {
  port: number;
  stats(): PdStats;
  close(): Promise<void>;
}

export async function startPrefillServing(config: RankConfig, serving: ServingEngine, engine: EngineLike, log: Logger): Promise<PrefillServing> {
  const { afd } = config;
  const kv = transferOf(engine, `prefill rank ${afd.rank}`);
  const peer = afd.pd.transport === 'tcp' ? undefined : kv.peer;
  const server = new KvTransferServer({ rank: afd.rank, launchId: afd.rendezvousId, layout: kv.kvLayout, service: new PrefillHost(serving, kv), log, peer });
  const host = afd.listenHost || afd.host;
  const port = await server.listen(afd.pd.port + afd.rank, host).catch((err: Error) => {
    throw new Error(`prefill rank ${afd.rank} cannot listen for KV transfers on ${host}:${afd.pd.port + afd.rank}: ${err.message} (pd.port + rank; choose another pd.port)`);
  });
  const shared = peer?.descriptor ? `${peer.kind} peer memory on ${peer.host}, else TCP` : 'TCP (its KV is not in shareable memory)';
  log.info({ host, port, layout: kv.kvLayout, transport: afd.pd.transport }, `prefill rank ${afd.rank} of ${afd.topology.name} serves KV transfers: ${afd.pd.transport === 'tcp' ? 'TCP' : shared}`);
  return { port, stats: () => servedPdStats(server.stats()), close: () => server.close() };
}

/** An attention rank's prefill ranks; null without any. */
export interface RemotePrefillRole {
  prefiller: RemotePrefiller;
  stats(): PdStats;
  close(): void;
}

export function remotePrefillOf(config: RankConfig, engine: EngineLike, log: Logger): RemotePrefillRole | null {
  const { afd } = config;
  const count = prefillRanksOf(afd.topology);
  if (afd.role !== 'attention' || count === 0) return null;
  const kv = transferOf(engine, `attention rank ${afd.rank}`);
  const { transport } = afd.pd;
  const peer = kv.peer ? { engine: kv.peer, layout: kv.kvLayout } : undefined;
  if (transport === 'peer' && !peer) log.warn({}, 'pd transport peer: this engine cannot map peer memory; every prompt is prefilled here (peer_unavailable)');
  const links = Array.from({ length: count }, (_, p) => new KvTransferClient({ host: afd.prefillHosts[p] ?? afd.host, port: afd.pd.port + p, launchId: afd.rendezvousId, rank: p, log, transport, peer }));
  const book = new PdLinkBook(count, (p) => links[p]!.isConnected, (p) => links[p]!.transport);
  const prefiller = new RemotePrefiller({ links, engine: kv, minPromptTokens: afd.pd.minPromptTokens, log, observer: book, transport });
  log.info({ prefillRanks: links.map((l) => l.endpoint), minPromptTokens: afd.pd.minPromptTokens, transport }, `prompts of ${afd.pd.minPromptTokens}+ tokens are prefilled on ${count} prefill rank(s)`);
  return {
    prefiller,
    stats: () => book.stats(),
    close: () => links.forEach((l) => l.close()),
  };
}
