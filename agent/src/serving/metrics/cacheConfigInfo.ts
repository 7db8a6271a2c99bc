/**
 * vllm:cache_config_info: a gauge fixed at 1 whose labels describe the KV cache (vLLM's
 * "info" metric of its CacheConfig). Values are spelled as vLLM spells them (Python's str():
 * "16", "0.9", "False", "None") so tools that read vLLM's labels read these too.
 */
import { Gauge, type Registry } from 'prom-client';

export interface CacheConfigInfo {
  /** Tokens per KV block. */
  blockSize: number;
  /** KV blocks of the engine's paged cache (vLLM's num_gpu_blocks, on any device). */
  numGpuBlocks: number;
  /** Prefix caching on (--enable-prefix-caching, the default of a role). */
  enablePrefixCaching?: boolean;
  /** --kv-memory-fraction as configured; null when not given. */
  gpuMemoryUtilization?: number | null;
  /** --kv-cache-mib as configured, in bytes; null when not given. */
  kvCacheMemoryBytes?: number | null;
}

const py = (v: number | boolean | null | undefined): string => (v === null || v === undefined ? 'None' : typeof v === 'boolean' ? (v ? 'True' : 'False') : String(v));

/** The label set of vllm:cache_config_info (a subset of vLLM's CacheConfig fields: those this engine has). */
export function cacheConfigLabels(info: CacheConfigInfo): Record<string, string> {
  return {
    block_size: py(info.blockSize),
    cache_dtype: 'auto', // the engine stores KV in the model's activation dtype
    enable_prefix_caching: py(info.enablePrefixCaching ?? false),
    gpu_memory_utilization: py(info.gpuMemoryUtilization),
    kv_cache_memory_bytes: py(info.kvCacheMemoryBytes),
    num_cpu_blocks: py(null), // no CPU swap space
    num_gpu_blocks: py(info.numGpuBlocks),
  };
}

export function registerCacheConfigInfo(registry: Registry, info: CacheConfigInfo): void {
  const labels = cacheConfigLabels(info);
  const gauge = new Gauge({ name: 'vllm:cache_config_info', help: 'Information of the LLMEngine CacheConfig', labelNames: Object.keys(labels), registers: [registry] });
  gauge.set(labels, 1);
}
