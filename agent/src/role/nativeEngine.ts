/**
 * The real engine behind EngineLike: the native Engine loaded for the colocated or
 * attention role. An attention rank also joins its FFN rank through native's
 * AttentionLink, configured straight from the shared AFD config: TCP for handshake and
 * control, and for the data plane either TCP (host memory) or NCCL (device memory, one
 * communicator per attention-FFN pair; CUDA backend only).
 */
import { AttentionLink, Engine, type AfdLinkOptions, type NativeEngineOptions } from '@afd/native';
import { roleLoadSpec } from '@afd/native/checkpoint';
import { countOf, isDeviceConnector, type AfdConfig } from '@afd/shared';
import { runProbeInChild } from '../probe/runProbe.js';
import type { EngineLike } from '../serving/engineLike.js';
import type { EngineOpener } from './engineOpener.js';

/** Default KV cache budget when --kv-cache-mib is not given. */
const DEFAULT_KV_CACHE_MIB = 256;
/** Share of the device memory free after the weights the KV cache takes on CUDA by default. */
export const DEFAULT_KV_MEMORY_FRACTION = 0.9;

/**
 * The engine's KV sizing: --kv-cache-mib is a fixed budget (any backend); otherwise on
 * CUDA the cache takes a share of the free device memory (--kv-memory-fraction, default
 * 0.9, as serving engines do), and on the CPU a fixed default. Both flags at once is an error.
 */
export function kvCacheOptions(
  backend: 'cpu' | 'cuda',
  kvCacheMib: number | undefined,
  kvMemoryFraction: number | undefined,
): { kvCacheBytes: number; kvMemoryFraction?: number } {
  if (kvCacheMib !== undefined && kvMemoryFraction !== undefined) {
    throw new Error('--kv-cache-mib and --kv-memory-fraction both size the KV cache; give one of them');
  }
  const kvCacheBytes = (kvCacheMib ?? DEFAULT_KV_CACHE_MIB) * 2 ** 20;
  if (backend !== 'cuda' || kvCacheMib !== undefined) return { kvCacheBytes };
  return { kvCacheBytes, kvMemoryFraction: kvMemoryFraction ?? DEFAULT_KV_MEMORY_FRACTION };
}

/**
 * Whether the rank moves messages through device buffers sized from maxStepTokens:
 * connector peer, or expert parallelism's device exchange (epTransport peer or nccl; auto
 * means peer under connector peer and nccl under connector nccl).
 */
function sizesDeviceBuffers(afd: AfdConfig): boolean {
  return afd.connector === 'peer' || (afd.enableExpertParallel && usesDeviceExchange(afd));
}

/** Whether expert parallelism's exchange moves device memory (epTransport peer or nccl, asked or by auto). */
function usesDeviceExchange(afd: AfdConfig): boolean {
  if (afd.epTransport === 'auto') return afd.connector === 'peer' || afd.connector === 'nccl';
  return afd.epTransport !== 'tcp';
}

/**
 * The connector options of a rank, from its AFD config (the same fields the FFN side reads).
 * backend: the resolved compute backend; connectors nccl and peer move device memory and need cuda.
 * maxStepTokens: the scheduler's max-num-batched-tokens (sizes the peer connector's inboxes
 * and an FFN rank's device exchange of expert parallelism; pass the same value to every rank
 * of a topology). A CUDA graph step pads a stage to its bucket, so the inboxes hold at
 * least the largest bucket. An FFN rank on cpu refuses epTransport peer and nccl.
 */
export function afdLinkOptions(afd: AfdConfig, backend?: 'cpu' | 'cuda', rendezvousId = '', maxStepTokens?: number): AfdLinkOptions {
  if (isDeviceConnector(afd.connector) && backend === 'cpu') {
    throw new Error(`connector "${afd.connector}" moves GPU memory and needs --backend cuda (this rank runs on cpu); use --backend cuda, or set "connector": "tcp"`);
  }
  if (afd.role === 'ffn' && afd.enableExpertParallel && (afd.epTransport === 'peer' || afd.epTransport === 'nccl') && backend === 'cpu') {
    throw new Error(`--ep-transport ${afd.epTransport} moves the FFN ranks' GPU memory and needs --backend cuda (this FFN rank runs on cpu); use --backend cuda, or --ep-transport tcp`);
  }
  return {
    ...(afd.connector !== 'tcp' ? { connector: afd.connector } : {}),
    ...(sizesDeviceBuffers(afd) && maxStepTokens !== undefined ? { maxStepTokens: Math.max(maxStepTokens, ...afd.cudaGraph.batchBuckets) } : {}),
    topology: afd.topology,
    rank: afd.rank,
    host: afd.host,
    ...(afd.ffnHosts.length > 0 ? { ffnHosts: afd.ffnHosts } : {}),
    basePort: afd.port,
    stepDeadlineMs: afd.stepDeadlineMs,
    ...(rendezvousId ? { rendezvousId } : {}),
    ...(afd.enableExpertParallel ? { expertParallel: true } : {}),
    ...(afd.epTransport !== 'auto' ? { epTransport: afd.epTransport } : {}),
    // An FFN rank whose own cudaGraph.policy is off serves every step eagerly (the attention side ignores it).
    ...(afd.cudaGraph.policy === 'off' ? { ffnGraphs: false } : {}),
  };
}

/**
 * The engine's CUDA graph options, straight from the config's cudaGraph (colocated and
 * attention alike; the cpu backend ignores them and its graph counters stay 0).
 */
export function engineGraphOptions(afd: AfdConfig): Pick<NativeEngineOptions, 'graphPolicy' | 'graphBatchBuckets'> {
  return { graphPolicy: afd.cudaGraph.policy, graphBatchBuckets: [...afd.cudaGraph.batchBuckets] };
}

/**
 * Connector nccl: puts the config's ncclEnv (NCCL_* names, checked by the schema) into this
 * process's environment, with NVLink multicast always off. The only path by which ncclEnv
 * reaches NCCL: both openers call it first, before the addon or NCCL is loaded.
 */
export function applyNcclEnv(afd: AfdConfig, env: NodeJS.ProcessEnv = process.env): void {
  if (afd.connector !== 'nccl') return;
  for (const [name, value] of Object.entries(afd.ncclEnv)) env[name] = String(value);
  env['NCCL_NVLS_ENABLE'] = '0';
}

/** cuda when this build and machine have a device, else cpu (probed in a child process). */
export async function resolveBackend(backend: 'cpu' | 'cuda' | 'auto'): Promise<'cpu' | 'cuda'> {
  if (backend !== 'auto') return backend;
  const probe = await runProbeInChild();
  return probe.result.variant === 'cuda' && probe.result.devices.length > 0 ? 'cuda' : 'cpu';
}

/** Watches an attention link and reports loss / recovery of the FFN peer. */
function watchLink(link: AttentionLink, onPeerState: ((problem: string | null) => void) | undefined): NodeJS.Timeout {
  const timer = setInterval(() => {
    const st = link.state();
    if (st.state === 'lost') onPeerState?.(`lost ${st.peer}: ${st.lastError || 'connection closed'}; reconnecting`);
    else if (st.state === 'connected') onPeerState?.(null);
  }, 250);
  timer.unref();
  return timer;
}

export const nativeEngineOpener: EngineOpener = async (req) => {
  applyNcclEnv(req.afd);
  const backend = await resolveBackend(req.backend);
  req.onProgress('loading', 0, 0, `reading ${req.modelDir}`);
  const { spec, residentBytes } = await roleLoadSpec(req.modelDir, req.role, {
    computeGateOnAttention: req.afd.computeGateOnAttention,
    loadFormat: req.loadFormat,
    seed: req.seed,
    onNote: (m) => req.onProgress('loading', 0, 0, m),
  });
  const verb = req.loadFormat === 'dummy' ? `generating ${spec.tensors.length} dummy tensors (seed ${req.seed})` : `mapping ${spec.tensors.length} tensors`;
  req.onProgress('loading', 0, residentBytes, `${verb} (${spec.config.arch}, ${req.role}) on ${backend}`);
  const native = await Engine.load(spec, {
    backend,
    threads: req.threads,
    deviceIndex: req.device,
    kvBlockSize: req.kvBlockSize,
    ...kvCacheOptions(backend, req.kvCacheMib, req.kvMemoryFraction),
    ...engineGraphOptions(req.afd),
  });
  const info = native.info;
  req.onProgress('loading', residentBytes, residentBytes);

  let link: AttentionLink | null = null;
  let watch: NodeJS.Timeout | null = null;
  if (req.role === 'attention') {
    const opts = afdLinkOptions(req.afd, backend, req.rendezvousId, req.maxStepTokens);
    link = new AttentionLink(native, opts);
    req.onProgress('rendezvous', 0, 1, `joining ${req.afd.topology.name} as attention rank ${opts.rank} (${link.state().peer || `FFN at ${opts.host}:${opts.basePort}`})`);
    try {
      await link.connect();
    } catch (err) {
      native.close();
      throw err;
    }
    req.onProgress('rendezvous', 1, 1);
    watch = watchLink(link, req.onPeerState);
  }

  const maxModelLen = Math.min(spec.config.maxPositionEmbeddings, req.maxModelLen ?? Infinity);
  const engine: EngineLike = {
    info: { vocabSize: info.vocabSize, eosTokenIds: spec.config.eosTokenIds, maxModelLen, numKvBlocks: info.numKvBlocks, kvBlockSize: info.kvBlockSize },
    step: (plan) => native.step(plan),
    stats: () => native.rankStats(req.afd.rank),
    async close() {
      if (watch) clearInterval(watch);
      // The attention rank tells its FFN rank to stop (shutdown flag), then frees the model.
      if (link) await link.close({ shutdown: true, reason: 'attention rank stopping' }).catch(() => undefined);
      native.close();
    },
  };
  const description = `${info.arch} ${info.role} on ${info.backend} (${countOf(info.threads, 'thread')}): ${countOf(info.numLayers, 'layer')}, ${(info.residentWeightBytes / 2 ** 20).toFixed(1)} MiB weights, ${info.numKvBlocks} KV blocks x ${info.kvBlockSize} tokens, context ${maxModelLen}`;
  return { engine, description };
};
