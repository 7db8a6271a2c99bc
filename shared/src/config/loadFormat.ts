/**
 * Where a role's weights come from (vLLM's --load-format names):
 * - auto: the model directory's safetensors; a directory with only config.json (and a
 *   tokenizer) is an error that names `dummy`;
 * - safetensors: the same, stated explicitly;
 * - dummy: random weights generated where they live (device memory on CUDA, host memory
 *   on the CPU), deterministic from the seed; each role generates only its own tensors.
 *   Full-size runs without checkpoints on disk (benchmarks, bring-up).
 */
import { z } from 'zod';

export const LOAD_FORMATS = ['auto', 'safetensors', 'dummy'] as const;
export type LoadFormat = (typeof LOAD_FORMATS)[number];

export const loadFormatSchema = z.enum(LOAD_FORMATS, {
  error: (issue) => `load format must be one of ${LOAD_FORMATS.join(', ')} (got ${JSON.stringify(issue.input)})`,
});

/** Largest seed of dummy weights (a non-negative 31-bit integer, as vLLM's --seed). */
export const MAX_DUMMY_SEED = 2 ** 31 - 1;
export const dummySeedSchema = z.int().min(0, 'seed must be >= 0').max(MAX_DUMMY_SEED, `seed must be <= ${MAX_DUMMY_SEED}`);

/** Parses a --load-format value; an unknown one is an error that lists the valid ones. */
export function parseLoadFormat(value: string): LoadFormat {
  const r = loadFormatSchema.safeParse(value);
  if (!r.success) throw new Error(`--load-format must be one of ${LOAD_FORMATS.join(', ')} (got "${value}")`);
  return r.data;
}
