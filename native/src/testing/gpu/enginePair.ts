/**
 * The GPU suite's pair of engines: a tiny checkpoint of one architecture loaded on the CPU
 * and on CUDA (colocated, 31 KV blocks of 4 tokens), handed to `use`, then closed and the
 * checkpoint removed; and the worst relative error between two runs' logit rows.
 */
import { rm } from 'node:fs/promises';
import { relativeError } from '../golden.js';
import { Engine } from '../../engine.js';
import { roleSpec, writeTinyModel } from '../engineTesting.js';

export async function withCpuAndCudaEngines<T>(arch: string, seed: number, use: (cpu: Engine, cuda: Engine) => Promise<T>): Promise<T> {
  const dir = await writeTinyModel(arch, seed);
  try {
    const spec = await roleSpec(dir, 'colocated');
    const opts = { numKvBlocks: 31, kvBlockSize: 4 };
    const cpu = await Engine.load(spec, { ...opts, backend: 'cpu' });
    const cuda = await Engine.load(spec, { ...opts, backend: 'cuda' });
    try {
      return await use(cpu, cuda);
    } finally {
      cpu.close();
      cuda.close();
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** Largest relativeError(got[i], want[i]) over the rows. */
export function worstRelError(got: readonly Float32Array[], want: readonly Float32Array[]): number {
  let worst = 0;
  for (let i = 0; i < want.length; i++) worst = Math.max(worst, relativeError(got[i]!, want[i]!));
  return worst;
}
