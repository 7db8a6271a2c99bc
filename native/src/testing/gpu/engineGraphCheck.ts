/**
 * GPU suite checks of CUDA graphs in the engine's own step path (Engine::step,
 * runtime/engine/graph-step.cc): the same schedule of steps runs on two CUDA engines,
 * graphs off and graphs decode-only, and must give identical greedy tokens, close
 * logits, and counters that prove the graphs ran (captures > 0, hits > 0,
 * hits + misses == decode steps). The schedule mixes batches of 1, 3 and 5 sequences,
 * one and two stages, contexts that cross KV block boundaries (new block-table buckets),
 * and prefills that grow the workspace between decode runs (allocation epoch: graphs
 * must be dropped and captured again, not replayed over freed memory).
 */
import { rm } from 'node:fs/promises';
import { buildStepPlan, type PlanSeq } from '@afd/shared';
import { relativeError } from '../golden.js';
import { Engine } from '../../engine.js';
import { roleSpec, scatteredBlocks, writeTinyModel } from '../engineTesting.js';
import { addonForBackend } from '../testingAddon.js';
import type { GpuCheck } from './gpuCheck.js';

/** Logits of graph replays vs eager: same kernels, but a padded batch may pick another GEMM / split path. */
export const graphLogitTolerance = 1e-3;

const KV_BLOCK = 4;
const NUM_BLOCKS = 127; // prime: scatteredBlocks never collides

interface Seq {
  prompt: number[];
  blocks: number[];
  cached: number;
  next: number; // token to feed next (sampled last step)
}

interface Phase {
  /** Sequences decoded together in this phase (fresh ones are prefilled first). */
  numSeqs: number;
  decodeSteps: number;
  /** stageSplit for the decode steps (undefined = one stage). */
  stageSplit?: number;
}

// 1 sequence, then 3, then 5 (each phase's prefill grows the workspace), 2 stages at the end.
const PHASES: Phase[] = [
  { numSeqs: 1, decodeSteps: 8 },
  { numSeqs: 3, decodeSteps: 8 },
  { numSeqs: 5, decodeSteps: 8 },
  { numSeqs: 5, decodeSteps: 6, stageSplit: 2 },
];

interface RunResult {
  steps: { tokens: number[]; logits: Float32Array }[];
  decodeSteps: number;
  /** Summed step time of the decode steps (informational). */
  decodeMs?: number;
}

/** Token ids of the prompts stay below 50 (and inside the model's vocabulary). */
function promptVocab(engine: Engine): number {
  return Math.min(50, engine.info.vocabSize);
}

async function runSchedule(engine: Engine, salt: number): Promise<RunResult> {
  const steps: RunResult['steps'] = [];
  const seqs: Seq[] = [];
  let decodeSteps = 0;
  let decodeMs = 0;
  const vocab = promptVocab(engine);
  const table = (s: Seq, ctx: number): number[] => s.blocks.slice(0, Math.ceil(ctx / KV_BLOCK));
  for (const phase of PHASES) {
    // Prefill the new sequences in one step (prompt lengths 3, 6, 9, ... cross block boundaries).
    const fresh: Seq[] = [];
    while (seqs.length + fresh.length < phase.numSeqs) {
      const i = seqs.length + fresh.length;
      const prompt = Array.from({ length: 3 + 3 * i }, (_, j) => (j * 5 + i * 11 + salt) % vocab);
      fresh.push({ prompt, blocks: scatteredBlocks(16, i + 1, NUM_BLOCKS), cached: 0, next: -1 });
    }
    if (fresh.length > 0) {
      const plan = buildStepPlan(
        fresh.map((s): PlanSeq => ({ tokenIds: s.prompt, numCached: 0, blockTable: table(s, s.prompt.length) })),
        { returnLogits: true },
      );
      const out = await engine.step(plan);
      fresh.forEach((s, i) => {
        s.cached = s.prompt.length;
        s.next = out.tokenIds[i]!;
      });
      steps.push({ tokens: [...out.tokenIds], logits: out.logits! });
      seqs.push(...fresh);
    }
    for (let d = 0; d < phase.decodeSteps; d++) {
      const plan = buildStepPlan(
        seqs.map((s): PlanSeq => ({ tokenIds: [s.next], numCached: s.cached, blockTable: table(s, s.cached + 1) })),
        { returnLogits: true, ...(phase.stageSplit !== undefined ? { stageSplit: phase.stageSplit } : {}) },
      );
      const out = await engine.step(plan);
      decodeSteps += 1;
      decodeMs += out.stepTimeMs;
      seqs.forEach((s, i) => {
        s.cached += 1;
        s.next = out.tokenIds[i]!;
      });
      steps.push({ tokens: [...out.tokenIds], logits: out.logits! });
    }
  }
  return { steps, decodeSteps, decodeMs };
}

/**
 * Epoch invalidation, white-box: sequence A decodes alone (key K captured and replayed),
 * a 40-token prefill of sequence C grows the workspace, then A decodes alone again with
 * the same key K. The graph of K points at the freed buffers, so it must be captured
 * again (captures + 1) rather than replayed, and the tokens must stay the eager ones.
 */
async function runEpochScenario(engine: Engine): Promise<{ run: RunResult; recaptures: number }> {
  const steps: RunResult['steps'] = [];
  const a = { blocks: scatteredBlocks(16, 6, NUM_BLOCKS), cached: 0, next: 0 };
  const table = (ctx: number): number[] => a.blocks.slice(0, Math.ceil(ctx / KV_BLOCK));
  const prompt = [7, 3, 9, 4, 1, 8, 2, 6];
  let out = await engine.step(buildStepPlan([{ tokenIds: prompt, numCached: 0, blockTable: table(prompt.length) }], { returnLogits: true }));
  steps.push({ tokens: [...out.tokenIds], logits: out.logits! });
  a.cached = prompt.length;
  a.next = out.tokenIds[0]!;
  const decodeA = async (n: number): Promise<void> => {
    for (let i = 0; i < n; i++) {
      out = await engine.step(buildStepPlan([{ tokenIds: [a.next], numCached: a.cached, blockTable: table(a.cached + 1) }], { returnLogits: true }));
      steps.push({ tokens: [...out.tokenIds], logits: out.logits! });
      a.cached += 1;
      a.next = out.tokenIds[0]!;
    }
  };
  await decodeA(4); // contexts 9..12: 3 blocks, bucket 4 -> warm-up, capture, 2 replays
  const longPrompt = Array.from({ length: 40 }, (_, j) => (j * 3 + 1) % promptVocab(engine));
  const c = scatteredBlocks(16, 7, NUM_BLOCKS).slice(0, 10);
  out = await engine.step(buildStepPlan([{ tokenIds: longPrompt, numCached: 0, blockTable: c }], { returnLogits: true }));
  steps.push({ tokens: [...out.tokenIds], logits: out.logits! });
  const before = engine.stats().graphCaptures;
  await decodeA(3); // contexts 13..15: 4 blocks, the same key
  return { run: { steps, decodeSteps: 7 }, recaptures: engine.stats().graphCaptures - before };
}

function compare(arch: string, eager: RunResult, graphed: RunResult, stats: { graphHits: number; graphMisses: number; graphCaptures: number }, off: { graphHits: number; graphMisses: number; graphCaptures: number }): GpuCheck[] {
  let firstDiff = -1;
  let worst = 0;
  let bitwise = 0;
  for (let i = 0; i < eager.steps.length; i++) {
    const a = eager.steps[i]!;
    const b = graphed.steps[i]!;
    if (firstDiff < 0 && a.tokens.join(',') !== b.tokens.join(',')) firstDiff = i;
    worst = Math.max(worst, relativeError(b.logits, a.logits));
    if (a.logits.length === b.logits.length && a.logits.every((v, j) => Object.is(v, b.logits[j]))) bitwise += 1;
  }
  const n = eager.steps.length;
  const counted = stats.graphHits + stats.graphMisses;
  return [
    {
      suite: 'engine',
      name: `${arch}: Engine.step CUDA graphs on vs off (batches 1/3/5, 1 and 2 stages, ${graphed.decodeSteps} decode steps)`,
      passed: firstDiff < 0 && worst <= graphLogitTolerance,
      detail: `${firstDiff < 0 ? 'tokens equal' : `tokens differ from step ${firstDiff}: eager ${eager.steps[firstDiff]!.tokens} graphs ${graphed.steps[firstDiff]!.tokens}`}; worst logits relError ${worst.toExponential(2)} (bound ${graphLogitTolerance}); ${bitwise}/${n} steps bitwise equal`,
    },
    {
      suite: 'engine',
      name: `${arch}: Engine.step graph counters (captures > 0, hits > 0, hits + misses = decode steps, off = 0)`,
      passed:
        stats.graphCaptures > 0 &&
        stats.graphHits > 0 &&
        counted === graphed.decodeSteps &&
        stats.graphCaptures <= stats.graphHits &&
        off.graphHits + off.graphMisses + off.graphCaptures === 0,
      detail: `hits ${stats.graphHits}, misses ${stats.graphMisses}, captures ${stats.graphCaptures}, decode steps ${graphed.decodeSteps}; graphs-off engine: ${off.graphHits}/${off.graphMisses}/${off.graphCaptures}; mean decode step ${(graphed.decodeMs! / graphed.decodeSteps).toFixed(3)} ms with graphs, ${(eager.decodeMs! / eager.decodeSteps).toFixed(3)} ms without`,
    },
  ];
}

/**
 * Graphs on vs off on tiny models (see the file comment) on `backend`: "cuda" in the GPU
 * suite; "cpu-graphs" (CPU with capture emulated) in the CPU tests.
 */
export async function engineGraphChecks(backend = 'cuda', threads = 0): Promise<GpuCheck[]> {
  const checks: GpuCheck[] = [];
  for (const arch of ['qwen3_moe', 'qwen3', 'llama', 'deepseek_v2', 'deepseek_v3']) {
    const dir = await writeTinyModel(arch, 11);
    let eagerEngine: Engine | null = null;
    let graphEngine: Engine | null = null;
    try {
      const spec = await roleSpec(dir, 'colocated');
      const opts = { backend, threads, numKvBlocks: NUM_BLOCKS, kvBlockSize: KV_BLOCK };
      const addon = addonForBackend(backend);
      eagerEngine = await Engine.loadWith(addon, spec, { ...opts, graphPolicy: 'off' });
      graphEngine = await Engine.loadWith(addon, spec, { ...opts, graphPolicy: 'decode-only', graphBatchBuckets: [1, 2, 4, 8] });
      const eager = await runSchedule(eagerEngine, 3);
      const graphed = await runSchedule(graphEngine, 3);
      checks.push(...compare(`${arch} on ${backend}`, eager, graphed, graphEngine.stats(), eagerEngine.stats()));
      const eagerEpoch = await runEpochScenario(eagerEngine);
      const graphEpoch = await runEpochScenario(graphEngine);
      const same = eagerEpoch.run.steps.every((st, i) => st.tokens.join(',') === graphEpoch.run.steps[i]!.tokens.join(','));
      let worst = 0;
      eagerEpoch.run.steps.forEach((st, i) => (worst = Math.max(worst, relativeError(graphEpoch.run.steps[i]!.logits, st.logits))));
      checks.push({
        suite: 'engine',
        name: `${arch} on ${backend}: Engine.step graph of a key is captured again after the workspace grows (allocation epoch)`,
        passed: same && worst <= graphLogitTolerance && graphEpoch.recaptures >= 1,
        detail: `tokens ${same ? 'equal' : 'differ'}; worst logits relError ${worst.toExponential(2)}; captures after the growth ${graphEpoch.recaptures} (>= 1 expected)`,
      });
    } catch (err) {
      checks.push({ suite: 'engine', name: `${arch} on ${backend}: Engine.step CUDA graphs on vs off`, passed: false, detail: (err as Error).message });
    } finally {
      eagerEngine?.close();
      graphEngine?.close();
      await rm(dir, { recursive: true, force: true });
    }
  }
  return checks;
}
