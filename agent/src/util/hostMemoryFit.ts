/**
 * The refusal of sizes the host cannot hold, said once for the rank and the agent: what
 * needs how much, what the host has and where that figure comes from, and what to change.
 * Checked before anything is allocated, so a wrong size fails at start instead of growing
 * a process towards the OOM killer.
 */
import { formatGiB, type HostMemory } from './hostMemory.js';

/** One part of what a process will hold in host memory. */
export interface MemoryNeed {
  /** What takes it, as the user set it, e.g. "--kv-cache-mib 4096 (serving.kvCacheMib)". */
  what: string;
  bytes: number;
}

/** The needs as "A" (one: its size follows), or "A (1.00 GiB) and B (2.00 GiB)". */
function describeNeeds(needs: readonly MemoryNeed[]): string {
  if (needs.length === 1) return needs[0]!.what;
  const parts = needs.map((n) => `${n.what} (${formatGiB(n.bytes)})`);
  return `${parts.slice(0, -1).join(', ')} and ${parts.at(-1)!}`;
}

/**
 * Null when the needs fit in what the host has left (or nothing is known of the host);
 * else the message: the needs, their total, the host's figure and its source, then
 * `advice(availableBytes)`.
 */
export function hostMemoryRefusal(needs: readonly MemoryNeed[], host: HostMemory | null, advice: (availableBytes: number) => string): string | null {
  const totalBytes = needs.reduce((sum, n) => sum + n.bytes, 0);
  if (host === null || totalBytes <= host.availableBytes) return null;
  return `${describeNeeds(needs)} would take ${formatGiB(totalBytes)} of host memory, but this host has ${formatGiB(host.availableBytes)} available (${host.source}); ${advice(host.availableBytes)}`;
}
