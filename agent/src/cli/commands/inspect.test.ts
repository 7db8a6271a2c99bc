import { describe, expect, it } from 'vitest';
import { formatMps } from './inspect.js';

describe('formatMps', () => {
  it('says whether MPS can be had, and which daemon runs', () => {
    expect(formatMps({ controlProgram: null, daemon: null, unavailable: 'nvidia-cuda-mps-control was not found' })).toBe('CUDA MPS: unavailable: nvidia-cuda-mps-control was not found');
    expect(formatMps({ controlProgram: '/usr/bin/nvidia-cuda-mps-control', daemon: null, unavailable: null })).toBe(
      'CUDA MPS: available (/usr/bin/nvidia-cuda-mps-control); no daemon runs: an agent starts one when ranks of a launch share a GPU',
    );
    expect(formatMps({ controlProgram: '/usr/bin/nvidia-cuda-mps-control', daemon: { pipeDirectory: '/tmp/nvidia-mps', managedByAgent: false }, unavailable: null })).toBe(
      "CUDA MPS: control daemon running on /tmp/nvidia-mps (not the agents': reused, never stopped); /usr/bin/nvidia-cuda-mps-control",
    );
  });
});
