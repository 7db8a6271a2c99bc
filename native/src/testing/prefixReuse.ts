/**
 * Test helper: a reused KV prefix (what prefix caching and the n samples of one prompt do
 * above the engine) read by the engine. Sequence A prefills a prompt into its blocks and
 * decodes; sequence B then starts with A's first full blocks in its own block table (their
 * KV as A wrote it), prefills only the prompt's tail into blocks of its own and decodes. B
 * must generate what A did, with the same logits up to the backend's rounding.
 */
import type { Engine } from '../engine.js';
import { generateGreedy } from './engineTesting.js';

export interface PrefixReuseRun {
  /** A: the whole prompt computed. */
  whole: { tokens: number[]; logits: Float32Array[] };
  /** B: the first `reusedTokens` prompt tokens read from A's blocks. */
  reused: { tokens: number[]; logits: Float32Array[] };
  reusedTokens: number;
}

/**
 * Runs A then B on `engine` (kvBlockSize `blockSize`, at least 12 blocks): B shares A's
 * first floor((len - 1) / blockSize) blocks, as the serving layer would.
 */
export async function runPrefixReuse(engine: Engine, prompt: readonly number[], blockSize: number, maxNewTokens = 5): Promise<PrefixReuseRun> {
  const perSeq = Math.ceil((prompt.length + maxNewTokens) / blockSize);
  const reusedBlocks = Math.floor((prompt.length - 1) / blockSize);
  const blocksA = Array.from({ length: perSeq }, (_, i) => 2 * i + 1); // scattered: odd ids for A
  const blocksB = [...blocksA.slice(0, reusedBlocks), ...Array.from({ length: perSeq - reusedBlocks }, (_, i) => 2 * i + 2)]; // B's own: even ids
  const whole = await generateGreedy(engine, prompt, maxNewTokens, { blocks: blocksA });
  const reused = await generateGreedy(engine, prompt, maxNewTokens, { blocks: blocksB, start: reusedBlocks * blockSize });
  return { whole, reused, reusedTokens: reusedBlocks * blockSize };
}
