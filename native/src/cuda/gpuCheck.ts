/** One check of the GPU suite (gpuSuite.ts), as every check module reports it. */
export interface GpuCheck {
  suite: 'conformance' | 'engine' | 'decoder' | 'golden';
  name: string;
  passed: boolean;
  detail: string;
}

/** bf16 tolerance for logits of the CUDA engine (activations are rounded to bf16 for the tensor cores). */
export const cudaLogitTolerance = 2e-2;
