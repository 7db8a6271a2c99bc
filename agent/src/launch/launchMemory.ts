/**
 * The agent's check of a launch against its own host, before any rank starts: the KV
 * caches of its CPU serving ranks together (they share the host's memory; each rank alone
 * would see only its own) must fit in what the host has left. The weights are the ranks'
 * own check (rankMemory.ts), once each has read its checkpoint's headers. CUDA ranks
 * hold their KV cache on their device.
 */
import { kvCacheSizing, type LaunchSpec, type RankPlacement } from '@afd/shared';
import type { HostMemory } from '../util/hostMemory.js';
import { hostMemoryRefusal } from '../util/hostMemoryFit.js';

const MIB = 2 ** 20;

/** Throws, naming the option, the ranks, the host's limit and what to give instead, when this agent's CPU ranks' KV caches exceed its host. */
export function checkLaunchFitsHost(spec: LaunchSpec, local: readonly RankPlacement[], agentId: string, host: HostMemory | null): void {
  const serving = local.filter((p) => p.backend === 'cpu' && p.role !== 'ffn');
  if (serving.length === 0) return;
  const perRankBytes = kvCacheSizing(spec.serving, 'cpu').kvCacheBytes;
  const mib = perRankBytes / MIB;
  const option = spec.serving.kvCacheMib === null ? `the CPU's default KV cache (serving.kvCacheMib ${mib})` : `--kv-cache-mib ${mib} (serving.kvCacheMib)`;
  const ranks = serving.map((p) => `${p.role} ${p.rank}`).join(', ');
  const what = serving.length === 1 ? `${option} of ${ranks} on agent "${agentId}"` : `${option} x ${serving.length} CPU ranks on agent "${agentId}" (${ranks})`;
  const refusal = hostMemoryRefusal([{ what, bytes: perRankBytes * serving.length }], host, (available) => {
    const most = Math.floor(available / serving.length / MIB);
    return most >= 1 ? `give --kv-cache-mib ${most} or less${serving.length > 1 ? ' (per rank)' : ''}, or place ranks on other agents` : 'free memory on this host, or place the ranks on other agents';
  });
  if (refusal !== null) throw new Error(refusal);
}
