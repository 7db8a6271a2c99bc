/**
 * GPU suite check of the cuBLAS grouped expert GEMM as CudaBackend::moeExperts runs it
 * (engine option expertGemm, cuda/expert-gemm-cublas.h): two CUDA engines on one tiny bf16
 * Qwen3-MoE checkpoint, one with our grouped kernel and one forced onto cuBLAS, prefill a
 * 300-token prompt in one step (the size where `auto` picks cuBLAS) and decode a few
 * tokens. The logits must agree within the bf16 cudaLogitTolerance of the CUDA engine; greedy
 * tokens are reported (a near-tie may flip them, since cuBLAS rounds gate/up to bf16).
 * The debugging override AFD_EXPERT_GEMM, when set, replaces both choices (the check then
 * compares the same path twice).
 */
import { rm } from 'node:fs/promises';
import { relativeError } from '../golden.js';
import { Engine } from '../../engine.js';
import { generateGreedy, roleSpec, scatteredBlocks, writeTinyModel } from '../engineTesting.js';
import { cudaLogitTolerance, type GpuCheck } from './gpuCheck.js';

const PROMPT_TOKENS = 300;
const KV_BLOCK = 16;
const NUM_BLOCKS = 31; // prime: scatteredBlocks never collides

function loadWith(choice: 'ours' | 'cublas', spec: Awaited<ReturnType<typeof roleSpec>>): Promise<Engine> {
  return Engine.load(spec, { backend: 'cuda', numKvBlocks: NUM_BLOCKS, kvBlockSize: KV_BLOCK, expertGemm: choice });
}

export async function engineExpertGemmChecks(): Promise<GpuCheck[]> {
  const dir = await writeTinyModel('qwen3_moe', 11);
  const name = `qwen3_moe engine on cuda: moeExperts on cuBLAS grouped GEMM vs ours (${PROMPT_TOKENS}-token prefill, 4 decode steps)`;
  try {
    const spec = await roleSpec(dir, 'colocated');
    const vocab = spec.config.vocabSize;
    const prompt = Array.from({ length: PROMPT_TOKENS }, (_, i) => (i * 37 + 11) % vocab);
    const blocks = scatteredBlocks(Math.ceil((PROMPT_TOKENS + 4) / KV_BLOCK), 3, NUM_BLOCKS);
    const ours = await loadWith('ours', spec);
    let a: Awaited<ReturnType<typeof generateGreedy>>;
    try {
      a = await generateGreedy(ours, prompt, 4, { blocks });
    } finally {
      ours.close();
    }
    let cublas: Engine;
    try {
      cublas = await loadWith('cublas', spec);
    } catch (e) {
      return [{ suite: 'engine', name, passed: false, detail: `the cuBLAS expert path did not load: ${(e as Error).message}` }];
    }
    try {
      const b = await generateGreedy(cublas, prompt, 4, { blocks });
      let worst = 0;
      for (let i = 0; i < a.logits.length; i++) worst = Math.max(worst, relativeError(b.logits[i]!, a.logits[i]!));
      const same = a.tokens.join(',') === b.tokens.join(',');
      return [
        {
          suite: 'engine',
          name,
          passed: worst <= cudaLogitTolerance,
          detail: `worst logits relError ${worst.toExponential(2)} (bound ${cudaLogitTolerance}); tokens ${same ? 'equal' : `differ (informational): ours ${a.tokens} cublas ${b.tokens}`}`,
        },
      ];
    } catch (e) {
      return [{ suite: 'engine', name, passed: false, detail: `the cuBLAS expert path failed: ${(e as Error).message}` }];
    } finally {
      cublas.close();
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
