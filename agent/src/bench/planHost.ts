/**
 * `afd-bench plan-host`: the host work of one served decode step with penalties, timed on
 * the CPU, without a GPU: buildStepPlan over the sequences' SeenTokens (as the scheduler
 * builds it), checkStepPlan in full and as Engine.step runs it (the shape, no list
 * contents), and on a tiny CPU engine with the real Qwen3 vocabulary the part of
 * Engine.step on the JavaScript thread (its check plus the addon's conversion of the plan)
 * and the native check of the lists' contents (on the engine's worker thread). The
 * defaults are the served H100 benchmark's shape: 64 decoding sequences, 700 distinct seen
 * tokens each (prompt and output), a 16-entry logit bias, presence / frequency /
 * repetition penalties on every sequence. One JSON report, microseconds per step (p10 and
 * median of the timed repetitions, after as many warm-up ones: a shared machine's noise
 * shows as a median well above p10).
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Command } from 'commander';
import { Engine } from '@afd/native';
import { SeenTokens, buildStepPlan, checkStepPlan, type PlanSeq, type StepPlan, type StepPlanLimits } from '@afd/shared';
import { makeModel } from '../model/makeModel.js';
import { intFlag } from '../util/intFlag.js';
import { distinctTokens } from './decodeExtras.js';

/** Options of runPlanHostBench. */
export interface PlanHostOptions {
  batch: number;
  /** Distinct seen tokens per sequence (prompt + output). */
  seen: number;
  /** Logit-bias entries per sequence. */
  bias: number;
  /** Tokens in the KV cache before the step (sets the block-table width). */
  context: number;
  /** Timed repetitions of each JavaScript-only measurement (after as many warm-up ones). */
  steps: number;
  /** Timed engine steps (after as many warm-up ones); a CPU step of the tiny model takes ~0.3-0.7 s at 64 sequences. */
  engineSteps: number;
  /** Also time Engine.step on a tiny CPU engine (makes the model in a temp directory). */
  engine: boolean;
  threads: number;
}

/** Microseconds per step of one measurement. */
export interface Timing {
  p10Us: number;
  medianUs: number;
}

export interface PlanHostReport {
  bench: 'plan-host';
  batch: number;
  seenPerSeq: number;
  biasPerSeq: number;
  vocabSize: number;
  /** buildStepPlan from the sequences' PlanSeq (SeenTokens lists). */
  buildStepPlan: Timing;
  /** checkStepPlan with the engine's limits, every rule (the lists' contents included). */
  checkStepPlan: Timing;
  /** checkStepPlan(plan, limits, { contents: false }): what Engine.step runs. */
  checkStepPlanShape: Timing;
  /** Engine.step's time on the JavaScript thread: its plan check and the addon's conversion (--engine). */
  engineStepJsThread?: Timing;
  /**
   * The native check of the lists' contents, on the engine's worker thread: the round trip
   * of a plan it refuses at its last seen count less that of one it refuses at its first
   * seen id (--engine, with seen tokens).
   */
  nativeListCheck?: Timing;
  /** The native step's own time (stepTimeMs) on the tiny CPU engine, for scale (--engine). */
  engineStepNative?: Timing;
}

const KV_BLOCK = 16;
const QWEN_VOCAB = 151936;

/**
 * The decode step's sequences: one new token each after `context` cached ones, penalties
 * over `seen` SeenTokens entries (a quarter prompt-only, count 0) and a `bias`-entry logit bias.
 */
export function planHostSeqs(o: Pick<PlanHostOptions, 'batch' | 'seen' | 'bias' | 'context'>, vocab: number): PlanSeq[] {
  const blocksPerSeq = Math.ceil((o.context + 1) / KV_BLOCK);
  return Array.from({ length: o.batch }, (_, s) => {
    const ids = distinctTokens(s, o.seen + o.bias, vocab);
    const seen = new SeenTokens();
    ids.slice(0, o.seen).forEach((t, i) => seen.set(t, i % 4 === 0 ? 0 : 1 + (i % 3)));
    return {
      tokenIds: [ids[0] ?? 0],
      numCached: o.context,
      blockTable: Array.from({ length: blocksPerSeq }, (_, j) => s * blocksPerSeq + j),
      sampling: { temperature: 0.8, topP: 0.95, topK: 0, seed: s },
      penalties: { presence: 0.5, frequency: 0.5, repetition: 1.1, seen },
      logitBias: new Map(ids.slice(o.seen).map((t, i) => [t, i % 2 === 0 ? 2 : -2])),
    };
  });
}

function timing(us: number[]): Timing {
  const sorted = [...us].sort((a, b) => a - b);
  const at = (q: number): number => Math.round(sorted[Math.floor(sorted.length * q)]! * 10) / 10;
  return { p10Us: at(0.1), medianUs: at(0.5) };
}

/** `fn` run `steps` times after as many warm-up runs; microseconds per run. */
function timeSync(steps: number, fn: () => void): Timing {
  const us: number[] = [];
  for (let i = 0; i < 2 * steps; i++) {
    const t0 = performance.now();
    fn();
    if (i >= steps) us.push((performance.now() - t0) * 1000);
  }
  return timing(us);
}

/** Round trips of Engine.step for a plan the engine refuses (a copy of `plan` changed by `spoil`), microseconds. */
async function refusalRoundTrips(engine: Engine, plan: StepPlan, steps: number, spoil: (p: StepPlan) => void): Promise<number[]> {
  const bad = { ...plan, extras: { ...plan.extras!, seenTokenIds: plan.extras!.seenTokenIds.slice(), seenCounts: plan.extras!.seenCounts.slice() } };
  spoil(bad);
  const us: number[] = [];
  for (let i = 0; i < 2 * steps; i++) {
    const t0 = performance.now();
    const refused = await engine.step(bad).then(
      () => false,
      () => true,
    );
    if (!refused) throw new Error('plan-host: the engine ran a plan it should refuse');
    if (i >= steps) us.push((performance.now() - t0) * 1000);
  }
  return us;
}

/** Engine.step's synchronous part (up to the addon handing the step to its worker), the native list check and the native step time. */
async function timeEngineStep(o: PlanHostOptions, seqs: PlanSeq[]): Promise<{ js: Timing; native: Timing; listCheck?: Timing }> {
  const tmp = await mkdtemp(join(tmpdir(), 'afd-plan-host-'));
  try {
    const dir = join(tmp, 'tiny-qwen3-moe');
    await makeModel({ arch: 'qwen3_moe', preset: 'tiny', outDir: dir, seed: 0 });
    const numKvBlocks = o.batch * Math.ceil((o.context + 1) / KV_BLOCK);
    const engine = await Engine.load(dir, { threads: o.threads, kvBlockSize: KV_BLOCK, numKvBlocks });
    try {
      if (engine.info.vocabSize !== QWEN_VOCAB) throw new Error(`plan-host: the tiny model's vocabulary is ${engine.info.vocabSize}, expected ${QWEN_VOCAB}`);
      const js: number[] = [];
      const native: number[] = [];
      for (let i = 0; i < 2 * o.engineSteps; i++) {
        const plan = buildStepPlan(seqs);
        const t0 = performance.now();
        const pending = engine.step(plan);
        const t1 = performance.now();
        const out = await pending;
        if (i < o.engineSteps) continue;
        js.push((t1 - t0) * 1000);
        native.push(out.stepTimeMs * 1000);
      }
      const plan = buildStepPlan(seqs);
      const last = plan.extras!.seenCounts.length - 1;
      if (last < 0) return { js: timing(js), native: timing(native) };
      const late = timing(await refusalRoundTrips(engine, plan, o.steps, (p) => (p.extras!.seenCounts[last] = -1)));
      const early = timing(await refusalRoundTrips(engine, plan, o.steps, (p) => (p.extras!.seenTokenIds[0] = -1)));
      const less = (a: number, b: number): number => Math.round((a - b) * 10) / 10;
      return { js: timing(js), native: timing(native), listCheck: { p10Us: less(late.p10Us, early.p10Us), medianUs: less(late.medianUs, early.medianUs) } };
    } finally {
      engine.close();
    }
  } finally {
    await rm(tmp, { recursive: true, force: true });
  }
}

export async function runPlanHostBench(o: PlanHostOptions): Promise<PlanHostReport> {
  const seqs = planHostSeqs(o, QWEN_VOCAB);
  const limits: StepPlanLimits = { vocabSize: QWEN_VOCAB, kvBlockSize: KV_BLOCK, numKvBlocks: o.batch * Math.ceil((o.context + 1) / KV_BLOCK) };
  let plan: StepPlan = buildStepPlan(seqs);
  const problems = checkStepPlan(plan, limits);
  if (problems.length > 0) throw new Error(`plan-host: the benchmark's plan is invalid: ${problems.join('; ')}`);
  const report: PlanHostReport = {
    bench: 'plan-host',
    batch: o.batch,
    seenPerSeq: o.seen,
    biasPerSeq: o.bias,
    vocabSize: QWEN_VOCAB,
    buildStepPlan: timeSync(o.steps, () => (plan = buildStepPlan(seqs))),
    checkStepPlan: timeSync(o.steps, () => checkStepPlan(plan, limits)),
    checkStepPlanShape: timeSync(o.steps, () => checkStepPlan(plan, limits, { contents: false })),
  };
  if (o.engine) {
    const { js, native, listCheck } = await timeEngineStep(o, seqs);
    report.engineStepJsThread = js;
    if (listCheck) report.nativeListCheck = listCheck;
    report.engineStepNative = native;
  }
  return report;
}

export function registerPlanHostBench(program: Command): void {
  program
    .command('plan-host')
    .description('host time per decode step with penalties and logit bias: buildStepPlan, the plan check, Engine.step on the JS thread (JSON report)')
    .option('--batch <n>', 'decoding sequences', '64')
    .option('--seen <n>', 'distinct seen tokens per sequence', '700')
    .option('--bias <n>', 'logit-bias entries per sequence', '16')
    .option('--context <n>', 'cached tokens per sequence', '1024')
    .option('--steps <n>', 'timed repetitions of each JavaScript measurement (after as many warm-up ones)', '2000')
    .option('--engine-steps <n>', 'timed engine steps (after as many warm-up ones; ~0.3-0.7 s each on the CPU)', '30')
    .option('--no-engine', 'skip the Engine.step timing (no tiny CPU engine)')
    .option('--threads <n>', 'CPU threads of the engine (0 = all cores)', '0')
    .option('--json-out <file>', 'also write the report here')
    .action(async (opts: Record<string, string | boolean | undefined>) => {
      const report = await runPlanHostBench({
        batch: intFlag('--batch', String(opts['batch']), 1),
        seen: intFlag('--seen', String(opts['seen']), 0, QWEN_VOCAB),
        bias: intFlag('--bias', String(opts['bias']), 0, QWEN_VOCAB),
        context: intFlag('--context', String(opts['context']), 0),
        steps: intFlag('--steps', String(opts['steps']), 1),
        engineSteps: intFlag('--engine-steps', String(opts['engineSteps']), 1),
        engine: opts['engine'] !== false,
        threads: intFlag('--threads', String(opts['threads']), 0),
      });
      const text = JSON.stringify(report, null, 2);
      if (typeof opts['jsonOut'] === 'string') await writeFile(opts['jsonOut'], `${text}\n`);
      process.stdout.write(`${text}\n`);
    });
}
