import { describe, expect, it } from 'vitest';
import type { ProbeResult } from '../../addon.js';
import { gpuSkipReason } from './gpuSuite.js';

function probe(o: Partial<ProbeResult>): ProbeResult {
  const lib = { loaded: false, soname: '', version: '', error: 'not probed' };
  return {
    version: '0.1.0', variant: 'cuda', backends: ['cpu', 'cuda'], cudaRuntimeVersion: 13000, cudaDriverVersion: 0,
    cudaError: '', devices: [], cublas: lib, cublasLt: lib, nccl: lib, ...o,
  };
}

describe('gpu suite skip rule', () => {
  it('skips with a reason on a CPU-only build', () => {
    expect(gpuSkipReason({ probe: () => probe({ variant: 'cpu', backends: ['cpu'] }) })).toMatch(/built without CUDA/);
  });
  it('skips with the driver message when no device is visible', () => {
    expect(gpuSkipReason({ probe: () => probe({ cudaError: 'no CUDA-capable device is detected' }) })).toMatch(/no CUDA device visible \(no CUDA-capable/);
  });
  it('runs when a device is visible', () => {
    const dev = { index: 0, name: 'NVIDIA H200', totalMemoryBytes: 1, freeMemoryBytes: 1, computeCapability: '9.0', multiProcessors: 132 };
    expect(gpuSkipReason({ probe: () => probe({ devices: [dev] }) })).toBeNull();
  });
});

describe('GPU suite groups', () => {
  it('parses a group list and refuses an unknown group by listing the others', async () => {
    const { gpuSuiteGroups, parseGpuSuiteGroups } = await import('./gpuSuite.js');
    expect(parseGpuSuiteGroups(undefined)).toEqual([...gpuSuiteGroups]);
    expect(parseGpuSuiteGroups(' golden, conformance:deepseek')).toEqual(['golden', 'conformance:deepseek']);
    expect(() => parseGpuSuiteGroups('golden,nope')).toThrow(/unknown GPU suite group "nope" \(groups: conformance:norm/);
  });
});
