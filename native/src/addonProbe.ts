/**
 * What the addon's probe() reports (the devices, and the libraries it loads at run time);
 * part of addon.ts's raw view, declared apart to keep that file small.
 */
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
