/**
 * The raw view of the product addon (afd_native.node), internal to native/: every export
 * of the addon is declared here and nowhere else; addon.test.ts checks this list against
 * the real exports. The testing addon's extra exports (runOp, cudaConformance, the
 * "cpu-graphs" backend) are declared in testing/testingAddon.ts. Everyone outside native/ uses the public face, index.ts
 * ('@afd/native'): the Engine, AttentionLink and FfnServer wrappers beside this file, the
 * probe and the exit hooks (lint keeps this file out of reach of the other packages).
 */
import { createRequire } from 'node:module';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { CudaGraphPolicy, RankConfig, StepPlan, TokenLogprobs, WireBasis } from '@afd/shared';
import type { ModelLoadSpec } from './modelSpec.js';

export type { DeviceProbe, LibraryProbe, ProbeResult } from './addonProbe.js';
import type { ProbeResult } from './addonProbe.js';

/** Engine options (native/src/runtime/engine/engine.h EngineOptions). */
export interface NativeEngineOptions {
  /** "cpu" (default) or "cuda"; the testing addon also has "cpu-graphs": cpu with CUDA-graph capture emulated. */
  backend?: string;
  /** CPU worker threads (0 = all cores). */
  threads?: number;
  /** CUDA device index. */
  deviceIndex?: number;
  /** Tokens per KV block (default 16). */
  kvBlockSize?: number;
  /** KV blocks to allocate; 0 = as many as fit in kvCacheBytes. */
  numKvBlocks?: number;
  /** KV cache budget in bytes when numKvBlocks is 0 (default 512 MiB). */
  kvCacheBytes?: number;
  /**
   * (0, 0.99]: size the KV cache (when numKvBlocks is 0) as this share of the device memory
   * free after the weights, less 2 GiB for activations; ignored on the CPU backend, which
   * uses kvCacheBytes. Too little room for one block is an error naming the numbers.
   */
  kvMemoryFraction?: number;
  /** KV cache storage dtype: f32, bf16 or f16; default: the backend's activation dtype (f32 on cpu, bf16 on cuda). */
  kvDtype?: 'f32' | 'bf16' | 'f16';
  /** CUDA graphs for decode steps (shared AfdConfig cudaGraph.policy): off (default) or decode-only; ignored on cpu. */
  graphPolicy?: CudaGraphPolicy;
  /** Tokens-per-stage buckets to capture, strictly ascending (cudaGraph.batchBuckets; default 1..512 powers of two). */
  graphBatchBuckets?: number[];
  /**
   * CUDA backend kernel choices (core/backend-options.h; ignored on cpu). The defaults are
   * the measured ones; these exist to measure and check the alternatives. The debugging
   * overrides AFD_CUDA_ATTENTION, AFD_ATTENTION_BLOCKS_PER_SM, AFD_ATTENTION_PRECISION, AFD_EXPERT_GEMM and
   * AFD_EXPERT_GEMM_MIN_TOKENS replace them (docs/afd-runtime.md).
   * attentionKernel: paged-attention family where a shape fits the tensor cores: auto
   * (default: the batch-size rule), tc (tensor cores) or simt (CUDA cores only).
   */
  attentionKernel?: 'auto' | 'tc' | 'simt';
  /** Blocks per multiprocessor the attention split count aims for, 1..16 (default 1). */
  attentionBlocksPerSm?: number;
  /**
   * Operand rounding of the tensor-core prefill attention: bf16 (default: rounded once, as
   * flash-attention does; half the tensor work, ~1e-3 relative) or split (q and the
   * probabilities as bf16 hi + lo, ~1e-5 of f32). AFD_ATTENTION_PRECISION replaces it.
   */
  attentionPrecision?: 'split' | 'bf16';
  /** MoE expert GEMM: auto (default: cuBLAS grouped GEMM from expertGemmMinTokens tokens on eager steps), ours or cublas. */
  expertGemm?: 'auto' | 'ours' | 'cublas';
  /** Tokens from which expertGemm auto picks cuBLAS, 1..2^30 (default 256). */
  expertGemmMinTokens?: number;
  /**
   * Recurrent-state slots of a model with linear-attention (gdn) layers: the most sequences
   * that may be running at once (each holds one slot from its first step to its end).
   * Default 64. Ignored (no memory) for a model without gdn layers. Range [1, 65536].
   */
  numStateSlots?: number;
  /**
   * Prefill / decode disaggregation by peer memory: keep the KV cache (and recurrent state)
   * in memory another process on this host can map (Engine.kvShareDescriptor). CUDA: one
   * cudaMalloc region exported by CUDA IPC; CPU: a file in kvShareDir mapped shared.
   */
  kvShareable?: boolean;
  /** CPU backend with kvShareable: the directory of the shared KV file (removed with the engine). */
  kvShareDir?: string;
}

/**
 * Where a peer process on this host maps an engine's KV cache (Engine.kvShareDescriptor):
 * opaque region handles and their sizes, and the usable blocks and state slots.
 */
export interface KvShareDescriptor {
  kind: 'cpu' | 'cuda';
  kv: Uint8Array;
  kvBytes: number;
  state: Uint8Array | null;
  stateBytes: number;
  numKvBlocks: number;
  numStateSlots: number;
}

/** What a loaded engine is. */
export interface NativeEngineInfo {
  role: 'colocated' | 'attention' | 'ffn';
  arch: string;
  backend: string;
  threads: number;
  numLayers: number;
  vocabSize: number;
  hiddenSize: number;
  /** 0 for the FFN role (no KV cache). */
  kvBlockSize: number;
  numKvBlocks: number;
  /** K + V bytes of one block over all layers. */
  kvBytesPerBlock: number;
  /**
   * The KV layout a transfer receiver checks (Engine.exportKvBlocks / importKvBlocks): the
   * cache dtype ('' for the ffn role), the layers with a paged cache (all but the gdn ones),
   * 2 tensors per layer (K, V) or 1 (MLA's latent row), and the bytes of one token of one
   * tensor of one layer. A block's transfer bytes: kvNumLayers x kvTensorsPerLayer x kvBlockSize x kvRowBytes.
   */
  kvDtype: 'f32' | 'bf16' | 'f16' | '';
  kvNumLayers: number;
  kvTensorsPerLayer: number;
  kvRowBytes: number;
  /** Weight bytes this role mapped (CPU) or uploaded (device). */
  residentWeightBytes: number;
  numWeightTensors: number;
  /** 0 when the model has no linear-attention (gdn) layer, else its recurrent-state slots (StepPlan.stateSlots). */
  numStateSlots: number;
  /** Bytes of one recurrent-state slot over every gdn layer (0 when none). */
  stateBytesPerSlot: number;
}

/** Runtime counters (native/src/runtime/engine/stats.h), cumulative since load. */
export interface NativeEngineStats {
  steps: number;
  lastStepMs: number;
  avgStepMs: number;
  prefillTokens: number;
  decodeTokens: number;
  sampledTokens: number;
  /** Time spent in the FFN half (local or served), ms. */
  ffnComputeMs: number;
  /** Time the attention half waited for FFN outputs, ms. */
  ffnWaitMs: number;
  graphHits: number;
  graphMisses: number;
  graphCaptures: number;
  /** Kernel / memset / copy nodes of the most recently captured decode-step graph (0 before one; CUDA). */
  graphNodes: number;
  /** FFN role: steps served to attention peers. */
  stepsServed: number;
  ffnLoopState: 'idle' | 'waiting-control' | 'receiving' | 'computing' | 'sending';
  ffnLoopLayer: number;
  ffnLoopStage: number;
  /** Milliseconds in the current FFN loop state. */
  ffnLoopStateMs: number;
  /** Distinct KV blocks referenced by the last step. */
  kvBlocksUsed: number;
  kvBlocksTotal: number;
  numLayers: number;
  numStages: number;
  /** [numLayers][numStages] connector bytes A->F / F->A (cumulative) and last sampled wire time (us). */
  a2fBytes: number[][];
  f2aBytes: number[][];
  a2fWireUs: number[][];
  f2aWireUs: number[][];
  /** How a2fWireUs / f2aWireUs were measured (comm/wire-time.h): one-way, round-trip/2, op-span or unavailable. */
  wireBasisA2f: WireBasis;
  wireBasisF2a: WireBasis;
}

/** Raw StepResult from native (see shared/src/engine/step.ts). */
export interface NativeStepResult {
  tokenIds: Int32Array;
  logits?: Float32Array;
  stepTimeMs: number;
  /** Present when a sequence of the plan asks numLogprobs >= 0. */
  logprobs?: TokenLogprobs;
  /** Present when a sequence of the plan asks numPromptLogprobs >= 0. */
  promptLogprobs?: TokenLogprobs;
}

/** The raw native engine (wrapped by Engine, engine.ts). */
export interface NativeEngine {
  /** Maps the spec's tensors and builds the role's model on a worker thread. */
  load(spec: ModelLoadSpec, options?: NativeEngineOptions): Promise<NativeEngineInfo>;
  /** Runs one step (colocated / attention roles) on a worker thread. */
  step(plan: StepPlan): Promise<NativeStepResult>;
  /** FFN half of one layer: hidden [numTokens, H] -> [numTokens, H] (ffn / colocated roles). */
  ffnForward(layer: number, hidden: Float32Array, numTokens: number, routerLogits?: Float32Array): Promise<Float32Array>;
  /** Attention role: run the FFN half on another (ffn-role) engine of this process. */
  attachFfn(ffn: NativeEngine): void;
  /**
   * The deferred token mask (StepExtras.tokenMask absent, maskRows used) of the oldest step
   * submitted without one: copied, synchronous. null withdraws it (that step fails with
   * "token mask withdrawn"); a mask of the wrong length fails that step naming the length.
   * Throws when no submitted step waits for a mask.
   */
  provideTokenMask(mask: Int32Array | null): void;
  /** The bytes of KV blocks `blockIds` (layout: docs/afd-runtime.md, runtime/engine/kv-transfer.h), on a worker thread. */
  exportKvBlocks(blockIds: Int32Array): Promise<Uint8Array>;
  /** Writes KV blocks `blockIds` from `data` (exportKvBlocks' layout, exact length). */
  importKvBlocks(blockIds: Int32Array, data: Uint8Array): Promise<void>;
  /** The recurrent state of one slot (models with gdn layers): stateBytesPerSlot bytes. */
  exportStateSlot(slot: number): Promise<Uint8Array>;
  /** Writes the recurrent state of one slot from exportStateSlot's bytes. */
  importStateSlot(slot: number, data: Uint8Array): Promise<void>;
  kvShareDescriptor(): KvShareDescriptor | null;
  kvFence(): Promise<void>;
  openKvPeer(descriptor: KvShareDescriptor): Promise<number>;
  pullKvBlocks(peer: number, srcIds: Int32Array, dstIds: Int32Array): Promise<void>;
  pullStateSlot(peer: number, srcSlot: number, dstSlot: number): Promise<void>;
  closeKvPeer(peer: number): void;
  info(): NativeEngineInfo;
  stats(): NativeEngineStats;
  profilerRange(start: boolean): void;
  /** Releases the model (after any in-flight call finishes). */
  close(): void;
}

/** One FFN rank's expert-parallel counters (native/src/ep/stats.h), cumulative since start. */
export interface NativeExpertStats {
  /** This FFN rank and the group size F. */
  rank: number;
  numRanks: number;
  /** Routed experts [expertStart, expertEnd) it holds, of numExperts per MoE layer. */
  expertStart: number;
  expertEnd: number;
  numExperts: number;
  /** "host:port" it listens on for its group peers. */
  groupListenAddress: string;
  /** [numLayers][numExperts] token-expert pairs its router sent to each expert (0 for dense layers). */
  tokensPerExpert: number[][];
  /** [numLayers] bytes of dispatch (pairs to their owners) and combine (outputs back) sent to / received from the other FFN ranks. */
  dispatchSentBytes: number[];
  dispatchReceivedBytes: number[];
  combineSentBytes: number[];
  combineReceivedBytes: number[];
  /** Time inside the group's all-to-alls (wire and waiting for peers), ms. */
  exchangeMs: number;
  /** Group steps joined. */
  groupSteps: number;
}

/** Where an attention rank's link to its FFN rank stands. */
export interface AttentionLinkState {
  /** connecting (before connect resolves), connected, lost (FFN rank gone; reconnecting), closed. */
  state: 'connecting' | 'connected' | 'lost' | 'closed';
  /** The FFN peer, e.g. "FFN rank 1 at 10.0.0.2:29501". */
  peer: string;
  /** Why the link is (or was last) down; empty when it never was. */
  lastError: string;
  /** Successful reconnects after a loss. */
  reconnects: number;
  /** Steps this rank joined while idle (placeholder rows only), so its block stays in lockstep. */
  emptySteps: number;
}

/** An attention-role engine joined to its FFN rank (runtime/afd/attention-link.h; wrapped by AttentionLink.ts). */
export interface NativeAttentionLink {
  /** Rendezvous with the FFN rank (retries until rendezvousTimeoutMs), then routes the engine's FFN half to it. */
  connect(): Promise<void>;
  /** Detaches and closes; with shutdown (default true) the FFN rank's loop is told to stop. */
  close(options?: { shutdown?: boolean; reason?: string }): Promise<void>;
  state(): AttentionLinkState;
}

/** Where an FFN rank's daemon loop stands (runtime/afd/ffn-loop.h). */
export interface FfnServerState {
  /** created, rendezvous (gathering its block), serving, stopped, failed. */
  state: 'created' | 'rendezvous' | 'serving' | 'stopped' | 'failed';
  peersJoined: number;
  /** Attention ranks [firstAttentionRank, firstAttentionRank + blockSize) are this rank's peers. */
  blockSize: number;
  firstAttentionRank: number;
  /** "host:port" actually listened on. */
  listenAddress: string;
  /** Most recent peer loss or failure; empty when none. */
  lastError: string;
  peerLosses: number;
  /** Why the loop ended (stopped / failed), e.g. "shutdown requested by attention rank 0 (from ...)". */
  exitReason: string;
}

/** The FFN role's daemon loop (a native thread; wrapped by FfnServer.ts). The constructor binds the port at once. */
export interface NativeFfnServer {
  /** Starts the loop; resolves once every attention peer of the block joined, rejects on rendezvous timeout. */
  start(): Promise<void>;
  /** Resolves with the exit reason when the loop ends (shutdown flag from an attention rank, stop()). */
  wait(): Promise<string>;
  /** Ends the loop (peers see a goodbye) and joins the thread. */
  stop(): Promise<void>;
  state(): FfnServerState;
  /** Always throws: the FFN role is connector-driven; nothing schedules steps on it. */
  step(): never;
  /** Expert-parallel counters; null when expert parallelism is off. */
  expertStats(): NativeExpertStats | null;
}

/**
 * One connector as the addon knows it (native/src/runtime/connectors.h): the facts the
 * TypeScript connector table keeps too, and whether this build can run it.
 */
export interface ConnectorInfo {
  /** The connector option value. */
  name: 'tcp' | 'nccl' | 'peer';
  /** What its data plane moves: host buffers or device buffers. */
  memory: 'host' | 'device';
  /** Every rank it links must be on one host (CUDA IPC). */
  oneHostOnly: boolean;
  /** Needs the CUDA build of the addon and the CUDA backend. */
  needsCuda: boolean;
  /** A step over it can be captured and replayed as a CUDA graph. */
  graphCapturable: boolean;
  /** This build registered its data plane (tcp always; nccl and peer in the CUDA build). */
  available: boolean;
}

/** The raw exports of afd_native.node. */
export interface NativeAddon {
  probe(): ProbeResult;
  Engine: new () => NativeEngine;
  /** config: the rank config (@afd/shared rankConfigSchema); native reads its afd and serving sections (binding/rank-config.h). Throws when the engine is not a loaded attention-role engine or the config is invalid. */
  AttentionLink: new (engine: NativeEngine, config: RankConfig) => NativeAttentionLink;
  /** Throws when the engine is not a loaded ffn-role engine, the config is invalid or the port is busy. */
  FfnServer: new (engine: NativeEngine, config: RankConfig) => NativeFfnServer;
  /**
   * Native threads left inside a library call that may never return (an NCCL abort with a
   * dead peer). While any runs, a normal exit can crash in the CUDA runtime's teardown:
   * leave with exitNow instead.
   */
  stuckNativeThreads(): number;
  /** Flushes stdio and ends the process with _exit(code), skipping atexit handlers; never returns. */
  exitNow(code: number): never;
  /** Every connector with its facts, in the order tcp, nccl, peer. */
  connectors(): ConnectorInfo[];
}

/** Names of every export, checked against the loaded addon by a test. */
export const addonExportNames = ['probe', 'Engine', 'AttentionLink', 'FfnServer', 'stuckNativeThreads', 'exitNow', 'connectors'] as const satisfies readonly (keyof NativeAddon)[];

/**
 * Where an addon file (afd_native.node, or the testing addon) may be: the path in
 * `envVar`, next to a bundled script, or the cmake-js build.
 */
export function addonCandidatesOf(fileName: string, envVar: string): string[] {
  const candidates: string[] = [];
  const explicit = process.env[envVar];
  if (explicit) candidates.push(explicit);
  const script = process.argv[1];
  if (script) {
    candidates.push(join(dirname(script), fileName));
    // agent/dist/afd-agent.cjs inside the monorepo: the cmake-js build output.
    candidates.push(join(dirname(script), '..', '..', 'native', 'build', 'Release', fileName));
  }
  let here: string | undefined;
  try {
    here = dirname(new URL(import.meta.url).pathname);
  } catch {
    here = undefined; // bundled as CommonJS: import.meta is empty
  }
  if (here) {
    candidates.push(join(here, '..', 'build', 'Release', fileName));
    candidates.push(join(here, '..', 'build', 'Debug', fileName));
  }
  return candidates;
}

/** Where the product addon may be (AFD_NATIVE_ADDON first). */
export function addonCandidates(): string[] {
  return addonCandidatesOf('afd_native.node', 'AFD_NATIVE_ADDON');
}

/** Loads the first existing candidate; throws an error that lists every path tried and `hint`. */
export function requireFirstAddon<T>(fileName: string, tried: string[], hint: string): T {
  const path = tried.find((p) => existsSync(p));
  if (!path) throw new Error(`native addon ${fileName} not found (tried: ${tried.join(', ')}). ${hint}`);
  return createRequire(path)(path) as T;
}

let cached: NativeAddon | undefined;

/** Loads the product addon once. Throws an error that lists every path tried. */
export function loadAddon(): NativeAddon {
  cached ??= requireFirstAddon<NativeAddon>('afd_native.node', addonCandidates(), 'Build it with `npm run build -w @afd/native` or set AFD_NATIVE_ADDON.');
  return cached;
}
