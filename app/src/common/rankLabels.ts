/** Short labels of the ranks the Dashboard shows (A0, F1, P0, C0), their order, and the role a snapshot's rank plays. */
import type { MetricsSnapshot } from '@afd/shared';

/** Short label of a rank: A0 (attention), F1 (ffn), P0 (prefill), C0 (colocated). */
export function rankLabel(role: string, rank: number): string {
  return `${role === 'attention' ? 'A' : role === 'ffn' ? 'F' : role === 'prefill' ? 'P' : 'C'}${rank}`;
}

/**
 * The role a snapshot's rank plays. A prefill rank runs a colocated engine, and agents
 * that report its native stats say 'colocated' there: one that carries pd is a prefill
 * rank (a colocated launch has no prefill/decode disaggregation).
 */
export function snapshotRole(stats: Pick<MetricsSnapshot['stats'], 'role' | 'pd'>): MetricsSnapshot['stats']['role'] {
  return stats.role === 'colocated' && stats.pd ? 'prefill' : stats.role;
}

/** Orders rank labels F.., A.., P.., C.., by rank within a role. */
export function compareLabels(a: string, b: string): number {
  const order = (l: string): number => ({ F: 0, A: 1, P: 2, C: 3 })[l[0] as 'F' | 'A' | 'P' | 'C'] ?? 4;
  return order(a) - order(b) || Number(a.slice(1)) - Number(b.slice(1));
}
