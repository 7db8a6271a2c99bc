import { describe, expect, it } from 'vitest';
import type { ProbeResult } from '@afd/native';
import { formatProbe } from '../cli/commands/inspect.js';
import { cpuOnlyFallback } from './runProbe.js';
import { NO_GPU_OR_DRIVER, noGpuReason, withReadableCudaError } from './cudaMessage.js';

const insufficient = 'no CUDA device visible: CUDA driver version is insufficient for CUDA runtime version';

function probe(patch: Partial<ProbeResult>): ProbeResult {
  const lib = { loaded: false, soname: '', version: '', error: `not probed: ${patch.cudaError ?? ''}` };
  return { ...cpuOnlyFallback(''), version: '0.1.0', variant: 'cuda', backends: ['cpu', 'cuda'], cudaRuntimeVersion: 13000, cublas: lib, cublasLt: lib, nccl: lib, ...patch };
}

describe('why there is no GPU', () => {
  it('says "no NVIDIA GPU or driver found" when no driver is installed, not the runtime error', () => {
    expect(noGpuReason(probe({ cudaDriverVersion: 0, cudaError: insufficient }))).toBe(NO_GPU_OR_DRIVER);
  });

  it('tells an old driver from a missing one, and a driver that sees no GPU', () => {
    expect(noGpuReason(probe({ cudaDriverVersion: 12020, cudaError: insufficient }))).toBe('the NVIDIA driver (CUDA 12.2) is older than the CUDA runtime the addon was built with (13.0): update the driver');
    expect(noGpuReason(probe({ cudaDriverVersion: 13000, cudaError: 'no CUDA device visible: no CUDA-capable device is detected' }))).toBe('no NVIDIA GPU found (the driver, CUDA 13.0, sees none)');
    expect(noGpuReason(probe({ devices: [{ index: 0, name: 'H200', totalMemoryBytes: 1, freeMemoryBytes: 1, computeCapability: '9.0', multiProcessors: 132 }] }))).toBe('');
  });

  it('inspect says it once: the devices line, and one line for the unprobed libraries', () => {
    const text = formatProbe(withReadableCudaError(probe({ cudaDriverVersion: 0, cudaError: insufficient })));
    expect(text).toBe(
      ['afd native 0.1.0 (cuda build), backends: cpu, cuda', 'CUDA runtime 13.0, driver none', `devices: cpu only (${NO_GPU_OR_DRIVER})`, '  cuBLAS, cuBLASLt, NCCL: not probed (no GPU)'].join('\n'),
    );
    expect(text.split(NO_GPU_OR_DRIVER)).toHaveLength(2);
    expect(text).not.toMatch(/insufficient/);
  });
});
