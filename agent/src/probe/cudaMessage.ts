/**
 * Why a host shows no GPU, said once and in words a user acts on. The CUDA runtime
 * answers "CUDA driver version is insufficient for CUDA runtime version" both when no
 * NVIDIA driver is installed and when it is too old; the driver version tells them apart.
 * The libraries that are only probed with a GPU then read "not probed (no GPU)" instead
 * of repeating the device error.
 */
import type { ProbeResult } from '@afd/native';

/** Said when there is no NVIDIA driver (hence no usable GPU). */
export const NO_GPU_OR_DRIVER = 'no NVIDIA GPU or driver found';

/** CUDA version code 13000 -> "13.0". */
export function cudaVersionText(v: number): string {
  return `${Math.floor(v / 1000)}.${Math.floor((v % 1000) / 10)}`;
}

/** One sentence for why no CUDA device is usable; '' when devices were found. */
export function noGpuReason(p: Pick<ProbeResult, 'variant' | 'devices' | 'cudaError' | 'cudaDriverVersion' | 'cudaRuntimeVersion'>): string {
  if (p.devices.length > 0) return '';
  if (p.variant === 'cpu') return p.cudaError || 'the native addon was built without the CUDA backend (no nvcc at build time)';
  const raw = p.cudaError.replace(/^no CUDA device visible: /, '');
  if (p.cudaDriverVersion === 0) return NO_GPU_OR_DRIVER;
  if (/no CUDA-capable device/i.test(raw)) return `no NVIDIA GPU found (the driver, CUDA ${cudaVersionText(p.cudaDriverVersion)}, sees none)`;
  if (/insufficient/i.test(raw)) {
    return `the NVIDIA driver (CUDA ${cudaVersionText(p.cudaDriverVersion)}) is older than the CUDA runtime the addon was built with (${cudaVersionText(p.cudaRuntimeVersion)}): update the driver`;
  }
  return raw || 'no CUDA device visible';
}

/** The probe with the no-GPU reason in words and the unprobed libraries saying so briefly. */
export function withReadableCudaError(p: ProbeResult): ProbeResult {
  if (p.devices.length > 0) return p;
  const reason = noGpuReason(p);
  const lib = (l: ProbeResult['cublas']): ProbeResult['cublas'] => (l.loaded || !l.error.startsWith('not probed') ? l : { ...l, error: 'not probed (no GPU)' });
  return { ...p, cudaError: reason, cublas: lib(p.cublas), cublasLt: lib(p.cublasLt), nccl: lib(p.nccl) };
}
