/** One check of the GPU suite (gpuSuite.ts), as every check module reports it. */
export interface GpuCheck {
  suite: 'conformance' | 'engine' | 'golden';
  name: string;
  passed: boolean;
  detail: string;
}

/** bf16 tolerance for logits of the CUDA engine (norm-wise; its activations are bf16 with f32 accumulation). */
export const cudaLogitTolerance = 2e-2;
