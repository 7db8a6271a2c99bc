/**
 * GPU suite group `gdn`: the Gated DeltaNet models (Qwen3-Next grouped projections,
 * Qwen3.5-MoE split ones) on the CUDA engine (bf16 activations, f32 recurrent state):
 *   - against the CPU engine: two sequences of different lengths, chunked prefill, greedy
 *     decode steps in lockstep with their own state slots: tokens equal up to the first
 *     near-tie of the CPU logits (top-2 margin printed), logits within the bf16 tolerance up
 *     to there. 33 steps on Qwen3-Next with dense FFNs (mlp_only_layers: every layer), where
 *     nothing but the attention half can move a logit; 8 on the MoE models, whose tiny
 *     random routers meet bf16 near-ties within a few dozen steps (a flipped expert choice
 *     changes that position's hidden state, and the recurrent state carries it on);
 *   - CUDA graphs: three sequences (a pad row in the bucket of 4, the pad state slot)
 *     decoded with graphs decode-only vs eager: tokens equal, logits within
 *     graphLogitTolerance, and the graphs were captured and replayed;
 *   - dual-batch overlap (two stages) vs one stage on CUDA.
 */
import { rm } from 'node:fs/promises';
import { relativeError } from '../golden.js';
import type { NativeEngineOptions } from '../../addon.js';
import { Engine } from '../../engine.js';
import { roleSpec, scatteredBlocks } from '../engineTesting.js';
import { tempDir, writeTestModel } from '../checkpointTesting.js';
import { gdnConfigs, generate, top2, writeGdnModel } from '../gdnTesting.js';
import { graphLogitTolerance } from './engineGraphCheck.js';
import { cudaLogitTolerance, type GpuCheck } from './gpuCheck.js';

const numKvBlocks = 61;
const base: NativeEngineOptions = { kvBlockSize: 4, numKvBlocks, numStateSlots: 8 };
const prompts = [
  [3, 17, 5, 9, 1, 30, 12, 8, 2, 40, 6],
  [44, 7, 61, 20, 13],
  [9, 9, 2, 71, 33, 5, 18],
];
const seqsOf = (n: number) => prompts.slice(0, n).map((prompt, i) => ({ prompt, blocks: scatteredBlocks(12, 3 + i, numKvBlocks), slot: 2 * i + 1 }));

type Run = Awaited<ReturnType<typeof generate>>;

/**
 * Compares b against a (the reference run) sequence by sequence: tokens equal, or the first
 * that differs at a near-tie of a (top-2 margin <= 0.05) ends that sequence's comparison;
 * logits within tol on every step before it.
 */
function compare(a: Run, b: Run, tol: number): { passed: boolean; detail: string } {
  let worst = 0;
  const notes: string[] = [];
  let passed = true;
  a.tokens.forEach((want, s) => {
    const got = b.tokens[s]!;
    for (let i = 0; i < want.length; i++) {
      const err = relativeError(b.logits[s]![i]!, a.logits[s]![i]!);
      if (got[i] === want[i]) {
        worst = Math.max(worst, err);
        continue;
      }
      // The first flip ends the comparison of this sequence: it must sit at a near-tie of the
      // reference; its row (relError printed) is not bounded, a routing flip moves it whole.
      const { margin } = top2(a.logits[s]![i]!);
      notes.push(`seq ${s} differs at step ${i} (reference top-2 margin ${margin.toExponential(2)}, relError ${err.toExponential(2)})`);
      if (margin > 0.05) passed = false;
      break;
    }
  });
  passed = passed && worst <= tol;
  return { passed, detail: `${notes.length === 0 ? 'tokens equal' : notes.join('; ')}; worst logits relError ${worst.toExponential(2)} (bound ${tol})` };
}

/** Qwen3-Next with a dense MLP in every layer: the gdn and gated attention layers alone against the CPU. */
async function denseCheck(): Promise<GpuCheck> {
  const dir = await tempDir('afd-qwen3_next-dense-gdn-');
  const engines: Engine[] = [];
  try {
    await writeTestModel(dir, { ...gdnConfigs['qwen3_next']!.config, mlp_only_layers: [0, 1, 2, 3] }, { seed: 11 });
    const spec = await roleSpec(dir, 'colocated');
    const cpu = await Engine.load(spec, { ...base, backend: 'cpu', threads: 4 });
    engines.push(cpu);
    const cuda = await Engine.load(spec, { ...base, backend: 'cuda' });
    engines.push(cuda);
    const want = await generate(cpu, seqsOf(2), 34, { chunk: 4 });
    const got = await generate(cuda, seqsOf(2), 34, { chunk: 4 });
    return { suite: 'engine', name: 'qwen3_next with dense FFNs (gdn + gated attention only): CUDA engine vs CPU engine, 2 sequences, prefill in chunks of 4, 33 decode steps', ...compare(want, got, cudaLogitTolerance) };
  } finally {
    for (const e of engines) e.close();
    await rm(dir, { recursive: true, force: true });
  }
}

export async function gdnChecks(): Promise<GpuCheck[]> {
  const checks: GpuCheck[] = [await denseCheck()];
  for (const arch of Object.keys(gdnConfigs)) {
    const dir = await writeGdnModel(arch, 11);
    const engines: Engine[] = [];
    const load = async (o: NativeEngineOptions) => {
      const e = await Engine.load(await roleSpec(dir, 'colocated'), { ...base, ...o });
      engines.push(e);
      return e;
    };
    try {
      const cpu = await load({ backend: 'cpu', threads: 4 });
      const cuda = await load({ backend: 'cuda' });
      const want = await generate(cpu, seqsOf(2), 9, { chunk: 4 });
      const got = await generate(cuda, seqsOf(2), 9, { chunk: 4 });
      checks.push({ suite: 'engine', name: `${arch} (gdn): CUDA engine vs CPU engine, 2 sequences, prefill in chunks of 4, 8 decode steps`, ...compare(want, got, cudaLogitTolerance) });

      const graphed = await load({ backend: 'cuda', graphPolicy: 'decode-only' });
      const eager = await generate(cuda, seqsOf(3), 12);
      const replayed = await generate(graphed, seqsOf(3), 12);
      const stats = graphed.stats();
      const g = compare(eager, replayed, graphLogitTolerance);
      checks.push({
        suite: 'engine',
        name: `${arch} (gdn): CUDA graphs decode-only vs eager, 3 sequences (a pad row in the pad state slot), 11 decode steps`,
        passed: g.passed && stats.graphCaptures > 0 && stats.graphHits > 0,
        detail: `${g.detail}; captures ${stats.graphCaptures}, hits ${stats.graphHits}, misses ${stats.graphMisses}`,
      });

      const oneStage = await generate(cuda, seqsOf(2), 8, { chunk: 4 });
      const twoStages = await generate(cuda, seqsOf(2), 8, { chunk: 4, stageSplit: 1 });
      checks.push({ suite: 'engine', name: `${arch} (gdn): CUDA dual-batch overlap (two stages) vs one stage`, ...compare(oneStage, twoStages, graphLogitTolerance) });
    } finally {
      for (const e of engines) e.close();
      await rm(dir, { recursive: true, force: true });
    }
  }
  return checks;
}
