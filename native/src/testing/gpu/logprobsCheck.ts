/**
 * GPU suite check of log-probabilities (group `logprobs`): the same plans on the CUDA and
 * the CPU engine of a tiny model, judged by compareLogprobs (logprobsRule.ts): sampled
 * rows with top 20 (greedy, and seeded with bias, penalties and min-p, which the CUDA
 * engine applies on the device), prompt rows over a prompt in two chunks, and rows under
 * an allowed-token mask (with bias and penalties; given with the plan, then deferred and
 * given by provideTokenMask), whose sampled tokens must be allowed ones, and penalties
 * read from a penalty slot the sampler counts into on the device. Greedy tokens
 * must be equal; seeded ones may differ under bf16 noise (their rows are then compared
 * without the chosen entry).
 */
import { rm } from 'node:fs/promises';
import { buildStepPlan, maskWordsPerRow, type PlanSeq, type StepPlan, type StepResult } from '@afd/shared';
import { Engine } from '../../engine.js';
import { roleSpec, tinyConfigs, writeTinyModel } from '../engineTesting.js';
import { cudaLogitTolerance, type GpuCheck } from './gpuCheck.js';
import { compareLogprobs } from './logprobsRule.js';

const prompt = [3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5];
const blocksOf = (i: number): number[] => [3 * i, 3 * i + 1, 3 * i + 2];

/** One step of the check: its plan and, for a deferred mask, the mask to give while it runs. */
interface CheckStep {
  plan: StepPlan;
  deferredMask?: Int32Array;
  /** Per sequence: the tokens its mask row allows (undefined: no mask). */
  allowed?: (Set<number> | undefined)[];
}

/** Two mask rows over the vocabulary: tokens t with t % 3 != 0, and five tokens. */
function maskRows(vocab: number): { mask: Int32Array; allowed: Set<number>[] } {
  const allowed = [new Set(Array.from({ length: vocab }, (_, t) => t).filter((t) => t % 3 !== 0)), new Set([1, 4, 9, 16, 25].map((t) => t % vocab))];
  const words = maskWordsPerRow(vocab);
  const mask = new Int32Array(2 * words);
  allowed.forEach((set, r) => set.forEach((t) => (mask[r * words + (t >> 5)]! |= 1 << (t & 31))));
  return { mask, allowed };
}

/** The steps of the check, in order (the prompt chunks write the KV cache the later steps read). */
function steps(vocab: number): CheckStep[] {
  const ids = prompt.map((t) => t % vocab);
  const seq = (i: number, extra: Partial<PlanSeq>): PlanSeq => ({ tokenIds: ids, numCached: 0, blockTable: blocksOf(i), ...extra });
  const penalties = { presence: 0.5, frequency: 0.5, repetition: 1.1, seen: new Map(ids.map((t, i) => [t, i % 3])) };
  const { mask, allowed } = maskRows(vocab);
  // Greedy first (its token must be equal), then a seeded row with bias and penalties, then a plain one.
  const masked = (base: number): PlanSeq[] => [
    seq(base, { constrained: true, logprobs: 20, logitBias: new Map([[1 % vocab, 2]]) }),
    seq(base + 1, { constrained: true, logprobs: 20, logitBias: new Map([[4 % vocab, 1.5], [3 % vocab, 5]]), penalties, sampling: { temperature: 0.8, seed: 9 } }),
    seq(base + 2, { logprobs: 5 }),
  ];
  const maskedAllowed = [allowed[0], allowed[1], undefined];
  return [
    {
      plan: buildStepPlan([
        seq(0, { logprobs: 20, promptLogprobs: 5 }),
        seq(1, { logprobs: 20, logitBias: new Map([[2 % vocab, 1.5], [7 % vocab, -Infinity]]), penalties, sampling: { temperature: 0.8, seed: 5, minP: 0.02 } }),
        seq(2, { tokenIds: ids.slice(0, 6), sample: false, promptLogprobs: 3, nextPromptTokenId: ids[6]! }),
      ]),
    },
    { plan: buildStepPlan([seq(2, { tokenIds: ids.slice(6), numCached: 6, promptLogprobs: 3, logprobs: 4 })]) },
    { plan: buildStepPlan(masked(3), { tokenMask: mask }), allowed: maskedAllowed },
    { plan: buildStepPlan(masked(6)), deferredMask: mask, allowed: maskedAllowed },
    // Penalty slots (greedy, so both engines count the same token): seeded, then read back
    // from the device table after the sampler counted step 4's token into it.
    { plan: buildStepPlan([seq(9, { logprobs: 20, penalties: { ...penalties, slot: { id: 5, seed: true } } })]) },
    { plan: buildStepPlan([seq(9, { logprobs: 20, penalties: { ...penalties, seen: new Map(), slot: { id: 5, seed: false } } })]) },
  ];
}

/** Runs one step; a deferred mask is given while it runs. */
async function run(engine: Engine, step: CheckStep): Promise<StepResult> {
  const p = engine.step(step.plan);
  if (step.deferredMask) engine.provideTokenMask(step.deferredMask);
  return p;
}

/** Sequences whose sampled token their mask row bans. */
function bannedTokens(step: CheckStep, out: StepResult): string[] {
  return (step.allowed ?? []).flatMap((set, s) => (set && !set.has(out.tokenIds[s]!) ? [`sequence ${s} sampled ${out.tokenIds[s]}, which its mask bans`] : []));
}

async function archCase(arch: string): Promise<GpuCheck> {
  const name = `${arch}: logprobs and prompt logprobs of the CUDA engine vs the CPU engine (bias, penalties, min-p, token mask on the device)`;
  const dir = await writeTinyModel(arch, 3);
  const engines: Engine[] = [];
  try {
    const spec = await roleSpec(dir, 'colocated');
    for (const backend of ['cpu', 'cuda'] as const) engines.push(await Engine.load(spec, { numKvBlocks: 31, kvBlockSize: 4, backend }));
    const [cpu, cuda] = engines as [Engine, Engine];
    const details: string[] = [];
    let passed = true;
    for (const [i, step] of steps(spec.config.vocabSize).entries()) {
      const a: StepResult = await run(cpu, step);
      const b: StepResult = await run(cuda, step);
      const banned = [...bannedTokens(step, a).map((x) => `cpu ${x}`), ...bannedTokens(step, b).map((x) => `cuda ${x}`)];
      if (banned.length > 0) {
        passed = false;
        details.push(`step ${i}: ${banned.join('; ')}`);
      }
      if (a.tokenIds[0] !== b.tokenIds[0]) {
        passed = false;
        details.push(`step ${i}: greedy tokens differ (cpu ${a.tokenIds[0]}, cuda ${b.tokenIds[0]})`);
      }
      for (const key of ['logprobs', 'promptLogprobs'] as const) {
        if (!a[key] || !b[key]) {
          passed = passed && !a[key] && !b[key];
          continue;
        }
        const c = compareLogprobs(a[key], b[key], cudaLogitTolerance);
        passed = passed && c.passed;
        details.push(`step ${i} ${key}: ${c.rows} rows, worst ${c.worstValueError.toExponential(2)}${c.chosenDiffer ? `, ${c.chosenDiffer} chose another token` : ''}${c.problems.length ? `; ${c.problems.slice(0, 3).join('; ')}` : ''}`);
      }
    }
    return { suite: 'engine', name, passed, detail: details.join(' | ') };
  } catch (err) {
    return { suite: 'engine', name, passed: false, detail: `threw: ${(err as Error).message}` };
  } finally {
    for (const e of engines) e.close();
    await rm(dir, { recursive: true, force: true });
  }
}

export async function logprobsChecks(): Promise<GpuCheck[]> {
  const checks: GpuCheck[] = [];
  for (const arch of ['qwen3_moe', 'llama', 'deepseek_v2'] as const) {
    if (tinyConfigs[arch]) checks.push(await archCase(arch));
  }
  return checks;
}
