/**
 * Golden fixtures written by tools/golden/make_golden.py (transformers reference runs):
 * per fixture folder a small bf16 checkpoint (config.json + model.safetensors) and
 * golden.json with prompts, greedy continuations and last-position logits. Engine tests
 * iterate loadGoldenFixtures() and compare tokens exactly and logits by norm-wise
 * relative error. They drive the engine through engineTesting's generateGreedy /
 * forcedLogits, which give a model with gdn layers (Qwen3-Next, Qwen3.5-MoE hybrids) its
 * recurrent-state slot on every step (StepPlan.stateSlots) and other models none.
 */
import { readdir, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import type { ModelConfigSpec } from '../modelSpec.js';
import { readModelConfig } from '../checkpoint/loadSpec.js';

const tokenId = z.int().min(0);

/** One prompt of a fixture. */
export const goldenCaseSchema = z.object({
  /** Prompt token ids. */
  promptIds: z.array(tokenId).min(1),
  /** Greedy continuation (argmax at every step), maxNewTokens ids. */
  greedyIds: z.array(tokenId).min(1),
  /** Last-position logits at selected steps: step s = the distribution that chose greedyIds[s]. */
  logits: z.array(z.object({ step: z.int().min(0), values: z.array(z.number()) })),
  /** Smallest top-1 minus top-2 logit gap over all steps (the reference's safety margin). */
  minTop2Margin: z.number().optional(),
  /**
   * MoE fixtures: per position of the teacher-forced sequence (prompt + greedyIds but the
   * last), the reference's smallest router gap over the MoE layers relative to the rms of
   * the scores it chose on (make_golden.py relative_router_margins). The CUDA suite reads a
   * value inside the bf16 noise band as a routing near-tie.
   */
  routerRelativeMargins: z.array(z.number()).optional(),
});

/** golden.json. */
export const goldenFileSchema = z.object({
  format: z.literal(1),
  /** Fixture name (= folder name). */
  name: z.string(),
  /** HF architecture string, e.g. "Qwen3MoeForCausalLM". */
  architecture: z.string(),
  /** What the fixture covers (odd sizes, rope type, dense layers ...). */
  description: z.string().default(''),
  /** Norm-wise relative error allowed on logits: ||ours - ref|| / ||ref||. */
  relTolerance: z.number().positive(),
  /** New tokens generated per case. */
  maxNewTokens: z.int().min(1),
  /** Storage dtype of the checkpoint; the reference computed in float32 on these rounded weights. */
  weightsDtype: z.string(),
  computeDtype: z.string(),
  /**
   * The transformers class that computed the reference when it is not the architecture's own
   * (hybrid fixtures: Qwen3_5MoeForConditionalGeneration, or its text-only Qwen3_5MoeForCausalLM).
   */
  referenceClass: z.string().optional(),
  /** Versions of the reference stack (informational). */
  versions: z.record(z.string(), z.string()).default({}),
  cases: z.array(goldenCaseSchema).min(1),
});

export type GoldenCase = z.infer<typeof goldenCaseSchema>;
export type GoldenFile = z.infer<typeof goldenFileSchema>;

/** A loaded fixture. */
export interface GoldenFixture {
  name: string;
  /** The fixture folder: a model directory buildLoadSpec accepts. */
  dir: string;
  config: ModelConfigSpec;
  golden: GoldenFile;
}

/** tools/golden/fixtures of this repository. */
export function defaultFixturesDir(): string {
  return fileURLToPath(new URL('../../../tools/golden/fixtures', import.meta.url));
}

/**
 * models/ of this repository: a shipped model whose folder has a golden.json (the demo
 * model's, written by tools/demo-model/train.py with transformers) is a fixture too.
 */
export function repositoryModelsDir(): string {
  return fileURLToPath(new URL('../../../models', import.meta.url));
}

/** Load and validate one fixture folder. */
export async function loadGoldenFixture(dir: string): Promise<GoldenFixture> {
  const path = join(dir, 'golden.json');
  let json: unknown;
  try {
    json = JSON.parse(await readFile(path, 'utf8'));
  } catch (err) {
    throw new Error(`${path}: cannot read the golden file: ${(err as Error).message}`);
  }
  const parsed = goldenFileSchema.safeParse(json);
  if (!parsed.success) throw new Error(`${path}: invalid golden file: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`);
  const golden = parsed.data;
  const config = await readModelConfig(dir);
  for (const [i, c] of golden.cases.entries()) {
    if (c.greedyIds.length !== golden.maxNewTokens) throw new Error(`${path}: case ${i} has ${c.greedyIds.length} greedy ids, expected maxNewTokens ${golden.maxNewTokens}`);
    const positions = c.promptIds.length + golden.maxNewTokens - 1;
    if (c.routerRelativeMargins && c.routerRelativeMargins.length !== positions) throw new Error(`${path}: case ${i} has ${c.routerRelativeMargins.length} router margins, expected one per position (${positions})`);
    for (const l of c.logits) {
      if (l.values.length !== config.vocabSize) throw new Error(`${path}: case ${i} step ${l.step} has ${l.values.length} logits, expected vocab_size ${config.vocabSize}`);
      if (l.step >= golden.maxNewTokens) throw new Error(`${path}: case ${i} logits step ${l.step} >= maxNewTokens`);
    }
  }
  return { name: golden.name, dir, config, golden };
}

/** Every fixture folder (one with a golden.json) under `root`, sorted by name; [] when there are none yet. */
export async function loadGoldenFixtures(root: string = defaultFixturesDir()): Promise<GoldenFixture[]> {
  let names: string[];
  try {
    names = (await readdir(root)).sort();
  } catch {
    return [];
  }
  const out: GoldenFixture[] = [];
  for (const name of names) {
    const dir = join(root, name);
    const isFixture = await stat(join(dir, 'golden.json')).then((s) => s.isFile(), () => false);
    if (isFixture) out.push(await loadGoldenFixture(dir));
  }
  return out;
}

/** Why golden tests skip, or null when fixtures exist. */
export function goldenSkipReason(fixtures: readonly GoldenFixture[], root: string = defaultFixturesDir()): string | null {
  return fixtures.length > 0 ? null : `no golden fixtures in ${root} yet: run tools/golden/make_golden.py on a machine with torch + transformers (see tools/golden/README.md)`;
}

/** Norm-wise relative error ||actual - expected|| / ||expected||. */
export function relativeError(actual: ArrayLike<number>, expected: ArrayLike<number>): number {
  if (actual.length !== expected.length) throw new Error(`relativeError: lengths differ (${actual.length} vs ${expected.length})`);
  let diff = 0;
  let norm = 0;
  for (let i = 0; i < expected.length; i++) {
    const d = actual[i]! - expected[i]!;
    diff += d * d;
    norm += expected[i]! * expected[i]!;
  }
  return norm === 0 ? Math.sqrt(diff) : Math.sqrt(diff / norm);
}
