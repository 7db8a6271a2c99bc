/**
 * The one TypeScript view of the native addon (afd_native.node). Every export of the
 * addon is declared here and nowhere else; addon.test.ts checks this list against the
 * real exports. Wrappers with friendlier APIs live beside this file.
 */
import { createRequire } from 'node:module';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';

/** A shared library (cuBLAS, cuBLASLt, NCCL) as the probe found it. */
export interface LibraryProbe {
  loaded: boolean;
  /** The soname that loaded, empty when none did. */
  soname: string;
  /** Library version, e.g. "2.28.3"; empty when unknown. */
  version: string;
  /** Why it did not load; empty when it did. */
  error: string;
}

/** One visible CUDA device. */
export interface DeviceProbe {
  index: number;
  name: string;
  totalMemoryBytes: number;
  freeMemoryBytes: number;
  /** "major.minor", e.g. "9.0". */
  computeCapability: string;
  multiProcessors: number;
}

/** What this addon build can do and what the machine offers. */
export interface ProbeResult {
  version: string;
  /** "cuda" when the CUDA backend was compiled in, else "cpu". */
  variant: 'cpu' | 'cuda';
  /** Compiled backends; always contains "cpu". */
  backends: string[];
  /** CUDA runtime version the addon was built with (e.g. 13000), 0 for CPU builds. */
  cudaRuntimeVersion: number;
  /** Driver's CUDA version, 0 when no driver. */
  cudaDriverVersion: number;
  /** Why no CUDA device is visible; empty when devices were found. */
  cudaError: string;
  devices: DeviceProbe[];
  cublas: LibraryProbe;
  cublasLt: LibraryProbe;
  nccl: LibraryProbe;
}

/** The raw exports of afd_native.node. */
export interface NativeAddon {
  probe(): ProbeResult;
}

/** Names of every export, checked against the loaded addon by a test. */
export const addonExportNames = ['probe'] as const satisfies readonly (keyof NativeAddon)[];

/** Where the addon may be: an explicit path, next to a bundled script, or the cmake-js build. */
export function addonCandidates(): string[] {
  const candidates: string[] = [];
  const explicit = process.env['AFD_NATIVE_ADDON'];
  if (explicit) candidates.push(explicit);
  const script = process.argv[1];
  if (script) {
    candidates.push(join(dirname(script), 'afd_native.node'));
    // agent/dist/afd-agent.cjs inside the monorepo: the cmake-js build output.
    candidates.push(join(dirname(script), '..', '..', 'native', 'build', 'Release', 'afd_native.node'));
  }
  let here: string | undefined;
  try {
    here = dirname(new URL(import.meta.url).pathname);
  } catch {
    here = undefined; // bundled as CommonJS: import.meta is empty
  }
  if (here) {
    candidates.push(join(here, '..', 'build', 'Release', 'afd_native.node'));
    candidates.push(join(here, '..', 'build', 'Debug', 'afd_native.node'));
  }
  return candidates;
}

let cached: NativeAddon | undefined;

/** Loads the addon once. Throws an error that lists every path tried. */
export function loadAddon(): NativeAddon {
  if (cached) return cached;
  const tried = addonCandidates();
  const path = tried.find((p) => existsSync(p));
  if (!path) {
    throw new Error(
      `native addon afd_native.node not found (tried: ${tried.join(', ')}). ` +
        'Build it with `npm run build -w @afd/native` or set AFD_NATIVE_ADDON.',
    );
  }
  const require = createRequire(path);
  cached = require(path) as NativeAddon;
  return cached;
}
