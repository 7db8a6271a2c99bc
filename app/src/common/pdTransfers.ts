/**
 * Prefill/decode disaggregation as the Dashboard shows it, from the ranks' latest
 * snapshots (RankStats.pd): the KV-transfer links as a matrix prefill rank x attention
 * rank (bytes, and the rate of the latest transfer), one row per link with its means,
 * the prompts the attention ranks prefilled themselves by reason, and each prefill
 * rank's served counters. Null when no rank reports pd (no prefill ranks). Pure data.
 */
import type { PdStats } from '@afd/shared';
import { snapshotRole, type DashboardModel } from './dashboardModel.js';

/** One KV-transfer link as its attention rank counts it. */
export interface PdLinkRow {
  /** "A0". */
  attention: string;
  /** "P1". */
  prefill: string;
  connected: boolean;
  transfers: number;
  bytes: number;
  /** Mean time from request to last byte per transfer, ms (NaN before one). */
  meanTransferMs: number;
  /** Mean prefill time on the prefill rank per transfer, ms (NaN before one). */
  meanPrefillMs: number;
  /** Rate of the most recent transfer, bytes/s (0 before one). */
  lastBytesPerSecond: number;
  lost: number;
  /** How the link moves KV now: peer (copied from the prefill rank's memory, one host) or tcp. */
  transport: 'peer' | 'tcp';
}

export interface PdServedRow {
  /** "P0". */
  label: string;
  served: PdStats['served'];
}

export interface PdTransfers {
  /** Matrix rows: P0.. (every prefill rank a link or a snapshot names). */
  prefillLabels: string[];
  /** Matrix columns: A0.. (attention ranks that report pd). */
  attentionLabels: string[];
  /** Row-major prefillLabels x attentionLabels: KV bytes received over the link (NaN: no such link). */
  bytes: Float64Array;
  /** Same shape: bytes/s of the link's latest transfer. */
  rate: Float64Array;
  links: PdLinkRow[];
  /** Prompts each attention rank prefilled itself, by reason ("short", "prefill_ranks_down", ...). */
  localPrefills: { label: string; reasons: Record<string, number> }[];
  /** Local prefills summed over the attention ranks, by reason. */
  localTotals: Record<string, number>;
  /** The prefill ranks' own counters, in rank order. */
  served: PdServedRow[];
}

const mean = (sum: number, n: number): number => (n > 0 ? sum / n : Number.NaN);

/** The PD view of the model's latest snapshots; null when no rank reports pd. */
export function pdTransfers(model: DashboardModel): PdTransfers | null {
  const attention: { label: string; pd: PdStats }[] = [];
  const served: PdServedRow[] = [];
  let prefillCount = 0;
  for (const label of model.rankLabels()) {
    const s = model.latest(label)?.stats;
    if (!s?.pd) continue;
    const role = snapshotRole(s);
    if (role === 'prefill') {
      served.push({ label, served: s.pd.served });
      prefillCount = Math.max(prefillCount, s.rank + 1);
    } else if (role === 'attention') {
      attention.push({ label, pd: s.pd });
      for (const l of s.pd.links) prefillCount = Math.max(prefillCount, l.prefillRank + 1);
    }
  }
  if (attention.length === 0 && served.length === 0) return null;
  const prefillLabels = Array.from({ length: prefillCount }, (_, p) => `P${p}`);
  const attentionLabels = attention.map((a) => a.label);
  const cols = attentionLabels.length;
  const bytes = new Float64Array(prefillCount * cols).fill(Number.NaN);
  const rate = new Float64Array(prefillCount * cols).fill(Number.NaN);
  const links: PdLinkRow[] = [];
  const localTotals: Record<string, number> = {};
  attention.forEach(({ label, pd }, col) => {
    for (const l of pd.links) {
      bytes[l.prefillRank * cols + col] = l.bytes;
      rate[l.prefillRank * cols + col] = l.lastBytesPerSecond;
      links.push({
        attention: label,
        prefill: `P${l.prefillRank}`,
        connected: l.connected,
        transfers: l.transfers,
        bytes: l.bytes,
        meanTransferMs: mean(l.transferMs, l.transfers),
        meanPrefillMs: mean(l.prefillMs, l.transfers),
        lastBytesPerSecond: l.lastBytesPerSecond,
        lost: l.lost,
        transport: l.transport,
      });
    }
    for (const [reason, n] of Object.entries(pd.localPrefills)) localTotals[reason] = (localTotals[reason] ?? 0) + n;
  });
  return {
    prefillLabels,
    attentionLabels,
    bytes,
    rate,
    links,
    localPrefills: attention.map(({ label, pd }) => ({ label, reasons: pd.localPrefills })),
    localTotals,
    served,
  };
}
