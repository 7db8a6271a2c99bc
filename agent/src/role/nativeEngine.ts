/**
 * The real engine behind EngineLike: the native Engine loaded for the colocated or
 * attention role. An attention rank also joins its FFN rank through native's
 * AttentionLink, which reads the rank config itself (one binding conversion): TCP for
 * handshake and control, and the data plane its connector names (connectors.ts).
 */
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { AttentionLink, Engine, type AttentionLinkState, type NativeEngineInfo, type NativeEngineOptions } from '@afd/native';
import { assertEngineBuilds, roleLoadSpec } from '@afd/native/checkpoint';
import { countOf, kvCacheSizing, resolveEpTransport, transportInfo, type AfdConfig, type RankConfig } from '@afd/shared';
import { runProbeInChild } from '../probe/runProbe.js';
import { afdHome } from '../util/afdHome.js';
import { kvPeerOf, type KvShareOptions } from './kvPeer.js';
import type { EngineLike, KvTransferEngine } from '../serving/engineLike.js';
import type { EngineOpener } from './engineOpener.js';
import { prefixCachingOf } from './prefixCaching.js';
import { checkRankFitsHost } from './rankMemory.js';

/**
 * What the rank config's transports need of this rank's backend (connectors.ts): a device
 * connector, or an FFN rank's device exchange of expert parallelism, needs CUDA. The
 * launch spec checks the same rule across placements; this is the check of a rank started
 * by hand.
 */
export function checkTransportsFit(config: RankConfig, backend: 'cpu' | 'cuda'): void {
  const { afd } = config;
  if (backend !== 'cpu' || afd.role === 'colocated') return;
  if (transportInfo(afd.connector).needsCuda) {
    throw new Error(`connector "${afd.connector}" moves GPU memory and needs --backend cuda (this rank runs on cpu); use --backend cuda, or set "connector": "tcp"`);
  }
  if (afd.role === 'ffn' && afd.enableExpertParallel && afd.epTransport !== 'auto' && transportInfo(afd.epTransport).needsCuda) {
    throw new Error(`--ep-transport ${afd.epTransport} moves the FFN ranks' GPU memory and needs --backend cuda (this FFN rank runs on cpu); use --backend cuda, or --ep-transport tcp`);
  }
}

/**
 * The engine's options from the rank config: backend, device and threads, the KV sizing
 * (kvCacheSizing: a fixed budget, or on CUDA a share of the free memory) and the CUDA
 * graph policy of the afd section (colocated and attention alike; the cpu backend ignores
 * it and its graph counters stay 0), and one recurrent-state slot per sequence that may run
 * (--max-num-seqs) for a model with linear-attention layers; and the KV in shareable
 * memory where prefill/decode disaggregation may map it (kvShareOptionsOf).
 */
export function engineOptionsOf(config: RankConfig, backend: 'cpu' | 'cuda', env: NodeJS.ProcessEnv = process.env): NativeEngineOptions & KvShareOptions {
  return {
    ...kvShareOptionsOf(config, env),
    backend,
    threads: config.device.threads,
    deviceIndex: config.device.index,
    kvBlockSize: config.serving.kvBlockSize,
    ...kvCacheSizing(config.serving, backend),
    graphPolicy: config.afd.cudaGraph.policy,
    graphBatchBuckets: [...config.afd.cudaGraph.batchBuckets],
    // A model with linear-attention layers keeps a state slot per running sequence (ignored otherwise).
    numStateSlots: Math.min(config.serving.maxNumSeqs, MAX_STATE_SLOTS),
  };
}

/**
 * Shareable KV (peer memory of the PD transfer) for a prefill rank, unless afd.pd.transport
 * is tcp: the attention ranks map the prefill ranks' memory, never the reverse. The CPU's
 * shared file lives under <AFD_HOME>/run/kv-share.
 */
export function kvShareOptionsOf(config: RankConfig, env: NodeJS.ProcessEnv = process.env): KvShareOptions {
  const { afd } = config;
  if (afd.role !== 'prefill' || afd.pd.transport === 'tcp') return {};
  return { kvShareable: true, kvShareDir: join(afdHome(env), 'run', 'kv-share') };
}

/** Most recurrent-state slots the engine takes (NativeEngineOptions.numStateSlots). */
export const MAX_STATE_SLOTS = 65_536;

/**
 * A rank on NCCL (its connector, or an FFN rank's expert exchange, by the transport table's
 * usesNccl): puts the config's ncclEnv (NCCL_* names, checked by the schema) into this
 * process's environment, with NVLink multicast always off. The only path by which ncclEnv
 * reaches NCCL: both openers call it first, before the addon or NCCL is loaded.
 */
export function applyNcclEnv(afd: AfdConfig, env: NodeJS.ProcessEnv = process.env): void {
  const exchange = afd.role === 'ffn' && afd.enableExpertParallel && transportInfo(resolveEpTransport(afd.epTransport, afd.connector)).usesNccl;
  if (!transportInfo(afd.connector).usesNccl && !exchange) return;
  for (const [name, value] of Object.entries(afd.ncclEnv)) env[name] = String(value);
  env['NCCL_NVLS_ENABLE'] = '0';
}

/** cuda when this build and machine have a device, else cpu (probed in a child process). */
export async function resolveBackend(backend: 'cpu' | 'cuda' | 'auto'): Promise<'cpu' | 'cuda'> {
  if (backend !== 'auto') return backend;
  const probe = await runProbeInChild();
  return probe.result.variant === 'cuda' && probe.result.devices.length > 0 ? 'cuda' : 'cpu';
}

/** Why a link's engine cannot step (its FFN peer is lost: the link redials); null when connected (or connecting, closed). */
export function linkProblem(st: AttentionLinkState): string | null {
  return st.state === 'lost' ? `lost ${st.peer}: ${st.lastError || 'connection closed'}; reconnecting` : null;
}

/** Watches an attention link and reports loss / recovery of the FFN peer. */
function watchLink(link: AttentionLink, onPeerState: ((problem: string | null) => void) | undefined): NodeJS.Timeout {
  const timer = setInterval(() => {
    const st = link.state();
    if (st.state === 'lost') onPeerState?.(linkProblem(st));
    else if (st.state === 'connected') onPeerState?.(null);
  }, 250);
  timer.unref();
  return timer;
}

export const nativeEngineOpener: EngineOpener = async (req) => {
  const { config } = req;
  const { model } = config;
  applyNcclEnv(config.afd);
  const backend = await resolveBackend(config.device.backend);
  checkTransportsFit(config, backend);
  req.onProgress('loading', 0, 0, `reading ${req.modelDir}`);
  const { spec, residentBytes } = await roleLoadSpec(req.modelDir, req.role, {
    computeGateOnAttention: config.afd.computeGateOnAttention,
    loadFormat: model.loadFormat,
    seed: model.seed,
    onNote: (m) => req.onProgress('loading', 0, 0, m),
  });
  // --enable-prefix-caching on a model with linear-attention layers fails before the weights load.
  if (spec.config.gdn !== null) prefixCachingOf(config.serving.enablePrefixCaching, { numStateSlots: 1 });
  assertEngineBuilds(spec.config); // a family the engine cannot build yet says so, not that it does not fit
  checkRankFitsHost({ config, role: req.role, backend, weightsBytes: residentBytes }); // before the engine allocates
  const verb = model.loadFormat === 'dummy' ? `generating ${spec.tensors.length} dummy tensors (seed ${model.seed})` : `mapping ${spec.tensors.length} tensors`;
  req.onProgress('loading', 0, residentBytes, `${verb} (${spec.config.arch}, ${req.role}) on ${backend}`);
  const options = engineOptionsOf(config, backend);
  if (options.kvShareDir) await mkdir(options.kvShareDir, { recursive: true });
  const native = await Engine.load(spec, options);
  const info = native.info;
  req.onProgress('loading', residentBytes, residentBytes);

  const link = req.role === 'attention' ? new AttentionLink(native, config) : null;
  let watch: NodeJS.Timeout | null = null;
  if (link) {
    const { afd } = config;
    req.onProgress('rendezvous', 0, 1, `joining ${afd.topology.name} as attention rank ${afd.rank} (${link.state().peer || `FFN at ${afd.host}:${afd.port}`})`);
    try {
      await link.connect();
    } catch (err) {
      native.close();
      throw err;
    }
    req.onProgress('rendezvous', 1, 1);
    watch = watchLink(link, req.onPeerState);
  }

  const maxModelLen = Math.min(spec.config.maxPositionEmbeddings, config.serving.maxModelLen ?? Infinity);
  const engine: EngineLike = {
    info: { vocabSize: info.vocabSize, eosTokenIds: spec.config.eosTokenIds, maxModelLen, numKvBlocks: info.numKvBlocks, kvBlockSize: info.kvBlockSize, numStateSlots: info.numStateSlots },
    step: (plan) => native.step(plan),
    provideTokenMask: (mask) => native.provideTokenMask(mask),
    // Read at once (the watcher polls every 250 ms): a step that just failed on a hung or
    // lost FFN rank has already marked the link lost, so new requests get 503 at once.
    ...(link ? { problem: () => linkProblem(link.state()) } : {}),
    // dbo: with it off only stage s0 runs, so the console marks s1 unused rather than empty.
    // role: a prefill rank runs a colocated engine but reports as what it is.
    stats: () => ({ ...native.rankStats(config.afd.rank), role: config.afd.role, dbo: config.afd.dbo.enabled }),
    kvTransfer: kvTransferOf(native),
    async close() {
      if (watch) clearInterval(watch);
      // The attention rank tells its FFN rank to stop (shutdown flag), then frees the model.
      if (link) await link.close({ shutdown: true, reason: 'attention rank stopping' }).catch(() => undefined);
      native.close();
    },
  };
  const description = `${info.arch} ${info.role} on ${info.backend} (${countOf(info.threads, 'thread')}): ${countOf(info.numLayers, 'layer')}, ${(info.residentWeightBytes / 2 ** 20).toFixed(1)} MiB weights, ${info.numKvBlocks} KV blocks x ${info.kvBlockSize} tokens${stateSlotsNote(info)}, context ${maxModelLen}`;
  return { engine, description };
};

/** The engine's KV blocks and state slots for prefill/decode disaggregation (the layout from its info), and its peer memory (kvPeer.ts). */
export function kvTransferOf(native: Engine): KvTransferEngine {
  const info = native.info;
  if (info.kvDtype !== 'f32' && info.kvDtype !== 'bf16' && info.kvDtype !== 'f16') throw new Error(`kvTransferOf: the ${info.role} engine has no KV cache (kvDtype "${info.kvDtype}")`);
  return {
    kvLayout: { dtype: info.kvDtype, blockSize: info.kvBlockSize, numKvLayers: info.kvNumLayers, tensorsPerLayer: info.kvTensorsPerLayer === 1 ? 1 : 2, rowBytes: info.kvRowBytes, stateBytes: info.numStateSlots > 0 ? info.stateBytesPerSlot : 0 },
    exportKvBlocks: (ids) => native.exportKvBlocks(ids),
    importKvBlocks: (ids, data) => native.importKvBlocks(ids, data),
    exportStateSlot: (slot) => native.exportStateSlot(slot),
    importStateSlot: (slot, data) => native.importStateSlot(slot, data),
    peer: kvPeerOf(native),
  };
}

/** ", N recurrent-state slots x M MiB" for a model with linear-attention layers, else "". */
export function stateSlotsNote(info: Pick<NativeEngineInfo, 'numStateSlots' | 'stateBytesPerSlot'>): string {
  if (!(info.numStateSlots > 0)) return '';
  return `, ${countOf(info.numStateSlots, 'recurrent-state slot')} x ${(info.stateBytesPerSlot / 2 ** 20).toFixed(2)} MiB`;
}
