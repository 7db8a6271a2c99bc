/**
 * Test helper: an agent's inventory with a CPU and `gpus` H200s, every size 1 and no
 * library loaded: what the console's placement checks and topology draft read of a host.
 */
import type { Inventory } from '@afd/shared';

export function fakeInventory(hostname: string, cpuCores: number, gpus: number): Inventory {
  const lib = { loaded: false, soname: '', version: '', error: '' };
  return {
    hostname,
    platform: 'linux',
    arch: 'x64',
    cpu: { model: 'cpu', cores: cpuCores },
    memory: { totalBytes: 1, freeBytes: 1 },
    devices: [
      { kind: 'cpu', index: 0, name: 'cpu', cores: cpuCores, totalMemoryBytes: 1, freeMemoryBytes: 1 },
      ...Array.from({ length: gpus }, (_, i) => ({ kind: 'cuda' as const, index: i, name: 'H200', totalMemoryBytes: 1, freeMemoryBytes: 1, computeCapability: '9.0', multiProcessors: 132, mps: { available: true, reason: null } })),
    ],
    backends: gpus > 0 ? ['cpu', 'cuda'] : ['cpu'],
    versions: { agent: '0', node: '20', addon: '0', addonVariant: 'cpu', cudaRuntime: null, cudaDriver: null },
    libraries: { cublas: lib, cublasLt: lib, nccl: lib },
    cudaError: '',
    models: [],
    advertiseHost: null,
    defaultModel: null,
    mps: { controlProgram: '/usr/bin/nvidia-cuda-mps-control', daemon: null, unavailable: null },
  };
}
