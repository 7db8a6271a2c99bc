/**
 * Prefill/decode disaggregation counters of one rank, in the RankStats.pd shape: an
 * attention rank's links (one per prefill rank, from RemotePrefiller's observer) and
 * local prefills by reason; a prefill rank's served prefills (from its KV-transfer server).
 */
import type { PdLinkStats, PdStats } from '@afd/shared';
import type { KvTransferServerStats } from './KvTransferServer.js';
import type { LocalPrefillReason, PdObserver } from './RemotePrefiller.js';
import type { PdTransfer } from './remotePrefill.js';

const NO_SERVED: PdStats['served'] = { prefills: 0, failed: 0, inFlight: 0, bytesSent: 0, connections: 0 };

/** An attention rank's book: fed by RemotePrefiller (PdObserver), read as RankStats.pd. */
export class PdLinkBook implements PdObserver {
  private readonly links: PdLinkStats[];
  private readonly local: Partial<Record<LocalPrefillReason, number>> = {};

  constructor(
    numPrefillRanks: number,
    /** Whether this rank is connected to prefill rank p now. */
    private readonly connected: (prefillRank: number) => boolean,
    /** How the link to prefill rank p moves KV now (default: tcp). */
    private readonly transport: (prefillRank: number) => 'peer' | 'tcp' = () => 'tcp',
  ) {
    this.links = Array.from({ length: numPrefillRanks }, (_, prefillRank) => ({ prefillRank, connected: false, transfers: 0, bytes: 0, transferMs: 0, prefillMs: 0, lastBytesPerSecond: 0, lost: 0, transport: 'tcp' }));
  }

  onTransfer(t: PdTransfer): void {
    const l = this.links[t.prefillRank];
    if (!l) return;
    l.transfers += 1;
    l.bytes += t.bytes;
    l.transferMs += t.transferMs;
    l.prefillMs += t.prefillMs;
    // The wire's (or the peer copy's) share: the transfer's time less the prefill rank's compute (at least 1 us).
    l.lastBytesPerSecond = t.bytes / (Math.max(1e-3, t.transferMs - t.prefillMs) / 1e3);
  }

  onLocalPrefill(reason: LocalPrefillReason): void {
    this.local[reason] = (this.local[reason] ?? 0) + 1;
  }

  onRankLost(prefillRank: number): void {
    const l = this.links[prefillRank];
    if (l) l.lost += 1;
  }

  stats(): PdStats {
    return { links: this.links.map((l) => ({ ...l, connected: this.connected(l.prefillRank), transport: this.transport(l.prefillRank) })), localPrefills: { ...this.local } as Record<string, number>, served: NO_SERVED };
  }
}

/** A prefill rank's RankStats.pd from its KV-transfer server's counters. */
export function servedPdStats(s: KvTransferServerStats): PdStats {
  return { links: [], localPrefills: {}, served: { prefills: s.doneTotal, failed: s.failedTotal, inFlight: s.inFlight, bytesSent: s.bytesSent, connections: s.connections } };
}
