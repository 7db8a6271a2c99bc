/**
 * GPU suite check of the engine's KV sizing from free device memory (kvMemoryFraction,
 * runtime/engine/engine.cc kvBlockCount): on CUDA a fraction must size the cache past what the
 * fixed kvCacheBytes gives, and a fraction that leaves no room after the 2 GiB activation
 * reserve must fail with an error that names the numbers.
 */
import { rm } from 'node:fs/promises';
import { Engine } from '../../engine.js';
import { roleSpec, writeTinyModel } from '../engineTesting.js';
import type { GpuCheck } from './gpuCheck.js';

export async function kvSizingChecks(): Promise<GpuCheck[]> {
  const dir = await writeTinyModel('qwen3_moe', 13);
  const name = 'qwen3_moe engine on cuda: KV cache sized from free device memory (kvMemoryFraction)';
  try {
    const spec = await roleSpec(dir, 'colocated');
    const base = { backend: 'cuda', kvBlockSize: 16, numKvBlocks: 0, kvCacheBytes: 8 * 2 ** 20 } as const;
    const fixed = await Engine.load(spec, base);
    const fixedBlocks = fixed.info.numKvBlocks;
    fixed.close();
    const sized = await Engine.load(spec, { ...base, kvMemoryFraction: 0.2 });
    const sizedBlocks = sized.info.numKvBlocks;
    const bytes = sizedBlocks * sized.info.kvBytesPerBlock;
    sized.close();
    let refusal = '';
    try {
      (await Engine.load(spec, { ...base, kvMemoryFraction: 0.001 })).close();
    } catch (e) {
      refusal = (e as Error).message;
    }
    const refusedClearly = /leaves no room for one block/.test(refusal);
    return [
      {
        suite: 'engine',
        name,
        passed: sizedBlocks > fixedBlocks && refusedClearly,
        detail: `fraction 0.2: ${sizedBlocks} blocks (${(bytes / 2 ** 30).toFixed(2)} GiB) vs ${fixedBlocks} from 8 MiB; fraction 0.001: ${refusal ? `refused: ${refusal.slice(0, 160)}` : 'NOT refused'}`,
      },
    ];
  } catch (e) {
    return [{ suite: 'engine', name, passed: false, detail: `failed: ${(e as Error).message}` }];
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
