/**
 * A CPU rank's host memory, checked after the checkpoint's headers are read and before the
 * engine allocates anything: its weights, and (attention and colocated) its KV cache, the
 * --kv-cache-mib budget or the CPU default. Without it a budget the host cannot hold is
 * zero-filled block by block, growing the process towards the OOM killer. A CUDA rank
 * keeps both on its device, where the engine checks free device memory itself.
 */
import { DEFAULT_KV_CACHE_MIB, kvCacheSizing, type ProcessRole, type RankConfig } from '@afd/shared';
import { readHostMemory, type HostMemory } from '../util/hostMemory.js';
import { hostMemoryRefusal, type MemoryNeed } from '../util/hostMemoryFit.js';

const MIB = 2 ** 20;

/** What the rank's KV cache option says, as the user set it. */
export function kvCacheOption(config: RankConfig): string {
  const mib = config.serving.kvCacheMib;
  return mib === null ? `the CPU's default KV cache (--kv-cache-mib ${DEFAULT_KV_CACHE_MIB})` : `--kv-cache-mib ${mib}`;
}

export interface RankMemoryRequest {
  config: RankConfig;
  role: ProcessRole;
  backend: 'cpu' | 'cuda';
  /** Bytes of the weights this rank holds (the load spec's residentBytes). */
  weightsBytes: number;
  /** What the host has left (default: read now; null = unknown, nothing is checked). */
  host?: HostMemory | null;
}

/** Throws, naming the sizes, the host's limit and what to give instead, when a CPU rank would not fit its host. */
export function checkRankFitsHost(r: RankMemoryRequest): void {
  if (r.backend !== 'cpu') return;
  const kvBytes = r.role === 'ffn' ? 0 : kvCacheSizing(r.config.serving, 'cpu').kvCacheBytes;
  const needs: MemoryNeed[] = [];
  if (kvBytes > 0) needs.push({ what: kvCacheOption(r.config), bytes: kvBytes });
  needs.push({ what: `the ${r.role} rank's weights`, bytes: r.weightsBytes });
  const refusal = hostMemoryRefusal(needs, r.host === undefined ? readHostMemory() : r.host, (available) => {
    const roomMib = Math.floor((available - r.weightsBytes) / MIB);
    if (kvBytes > 0 && roomMib >= 1) return `give --kv-cache-mib ${roomMib} or less`;
    const split = r.role === 'ffn' ? ', split the experts over more FFN ranks (--enable-expert-parallel)' : '';
    return `${kvBytes > 0 ? 'the weights leave no room for a KV cache' : 'the weights do not fit'}: serve a smaller model${split}, run on a host with more memory, or use --backend cuda`;
  });
  if (refusal !== null) throw new Error(refusal);
}
