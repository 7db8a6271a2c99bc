/**
 * The raw view of the testing addon (afd_native_testing.node): the product addon's exports
 * (../addon.ts), built from the same objects, plus what only tests and the GPU suite use:
 * runOp (one backend op), cudaConformance (the CUDA op conformance suite) and the
 * "cpu-graphs" engine backend (CPU with CUDA-graph capture emulated). addon.test.ts checks
 * this list against the real exports. An engine of this addon is joined to its topology
 * by this addon's classes too (Engine.loadWith; the wrappers follow the engine).
 */
import { dirname, join } from 'node:path';
import { addonCandidatesOf, addonExportNames, loadAddon, requireFirstAddon, type NativeAddon } from '../addon.js';
import type { RankConfig } from '@afd/shared';

/** One op conformance case of the CUDA backend against the CPU backend (native/src/cuda/testing/conformance.h). */
export interface CudaConformanceCase {
  op: string;
  /** Human-readable shape of the case. */
  shape: string;
  /** Weight / cache dtype of the case. */
  dtype: string;
  /** ||cuda - cpu|| / ||cpu||. */
  relError: number;
  /** Allowed relError. */
  bound: number;
  /** NaN-poisoned output elements the CUDA op never wrote. */
  unwritten: number;
  /** Integer outputs (expert ids, tokens) that differ. */
  mismatches: number;
  passed: boolean;
}

/** A tensor passed to runOp: dtype, shape and row-major data. */
export interface OpTensor {
  dtype: 'f32' | 'bf16' | 'f16' | 'i32';
  shape: number[];
  /** f32: Float32Array; i32: Int32Array (or Uint32Array bits); bf16 / f16: Uint16Array of raw bits. */
  data: Float32Array | Int32Array | Uint16Array | Uint32Array;
}

/** Which backend runOp uses. */
export interface OpBackend {
  /** "cpu" or "cuda". */
  name: string;
  threads?: number;
  deviceIndex?: number;
}

/** The raw exports of afd_native_testing.node. */
/** The connector options native derives from a rank config (runtime/afd/connector-options.h). */
export interface NativeLinkOptions {
  numAttention: number;
  numFfn: number;
  rank: number;
  host: string;
  ffnHosts: string[];
  listenHost: string;
  basePort: number;
  stepDeadlineMs: number;
  rendezvousTimeoutMs: number;
  rendezvousId: string;
  connector: 'tcp' | 'nccl' | 'peer';
  expertParallel: boolean;
  /** null = auto (the runtime picks: the connector's own transport). */
  epTransport: 'tcp' | 'peer' | 'nccl' | null;
  ffnGraphs: boolean;
  /** Rows the device buffers hold per stage: max(serving.maxNumBatchedTokens, the largest graph bucket). */
  maxStepTokens: number;
}

export interface NativeTestingAddon extends NativeAddon {
  /**
   * Runs one backend op (conformance and op tests; op names, inputs and params in
   * native/src/testing/op-binding.cc). Returns the op's outputs read back to the host.
   */
  runOp(backend: OpBackend, op: string, inputs: Record<string, OpTensor>, params?: Record<string, number | boolean>): Record<string, Float32Array | Int32Array>;
  /** What native reads from a rank config (binding/rank-config.h), the derived values included. */
  linkOptionsOf(config: RankConfig): NativeLinkOptions;
  /** CUDA op conformance against the CPU backend; throws in builds without CUDA or with no device. */
  cudaConformance(options?: { device?: number; seed?: number; family?: string }): CudaConformanceCase[];
}

/** Names of every export of the testing addon, checked against the loaded addon by a test. */
export const testingAddonExportNames = [...addonExportNames, 'runOp', 'linkOptionsOf', 'cudaConformance'] as const satisfies readonly (keyof NativeTestingAddon)[];

/** Engine backends only the testing addon registers. */
const testingBackends = new Set(['cpu-graphs']);

/**
 * Where the testing addon may be: AFD_NATIVE_TESTING_ADDON, beside AFD_NATIVE_ADDON (a GPU
 * host's carried Release folder holds both), next to a bundled script, or the cmake-js build.
 */
export function testingAddonCandidates(): string[] {
  const product = process.env['AFD_NATIVE_ADDON'];
  const candidates = addonCandidatesOf('afd_native_testing.node', 'AFD_NATIVE_TESTING_ADDON');
  if (product) candidates.splice(process.env['AFD_NATIVE_TESTING_ADDON'] ? 1 : 0, 0, join(dirname(product), 'afd_native_testing.node'));
  return candidates;
}

let cached: NativeTestingAddon | undefined;

/** Loads the testing addon once. Throws an error that lists every path tried. */
export function loadTestingAddon(): NativeTestingAddon {
  cached ??= requireFirstAddon<NativeTestingAddon>(
    'afd_native_testing.node',
    testingAddonCandidates(),
    'Build it (with the product addon) by `npm run build -w @afd/native`, or set AFD_NATIVE_TESTING_ADDON.',
  );
  return cached;
}

/** The addon whose Engine runs `backend`: the testing addon for test-only backends (cpu-graphs), else the product addon. */
export function addonForBackend(backend: string): NativeAddon {
  return testingBackends.has(backend) ? loadTestingAddon() : loadAddon();
}
