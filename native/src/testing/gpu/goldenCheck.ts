/**
 * The golden fixtures (transformers reference) on the CUDA engine, under the bf16 rule:
 * teacher-forced along the reference's greedy tokens, every step's arg-max must equal the
 * reference token, except at a step where the reference's own top-1 / top-2 logit margin
 * is within the bf16 noise of the logits: below max(bf16MarginFloor, cudaLogitTolerance x
 * rms of the reference logits at that step). bf16 activations (with f32 accumulation)
 * perturb logits by up to cudaLogitTolerance norm-wise, i.e. by about that fraction of
 * their rms per logit, so a top-2 gap inside that band may flip (measured on an H200: flips
 * at margins 1.2e-2 .. 3.6e-2 on fixtures whose logits have rms ~2; the margin is printed). The margin comes from the reference logits where the fixture stores that
 * step, else from the CPU engine teacher-forced the same way (it matches the reference to
 * 1e-3, see engine.golden.test.ts). Logits at the stored steps must be within
 * cudaLogitTolerance (norm-wise), except after a routing near-tie of the reference
 * (goldenRule.ts). Free-running greedy equality is reported too.
 */
import { loadGoldenFixtures, goldenSkipReason, relativeError } from '../golden.js';
import { Engine } from '../../engine.js';
import { forcedLogits, generateGreedy, scatteredBlocks, top2 } from '../engineTesting.js';
import { cudaLogitTolerance, type GpuCheck } from './gpuCheck.js';
import { judgeGoldenCase, type MeasuredFlip } from './goldenRule.js';
import { loadReferenceNoise } from './goldenNoise.js';

/** Below this reference margin a greedy flip under bf16 is always accepted (and reported). */
export const bf16MarginFloor = 1e-2;

/** The reference margin below which a flip is within the bf16 noise of this logit row. */
export function bf16FlipMargin(reference: Float32Array): number {
  return Math.max(bf16MarginFloor, cudaLogitTolerance * rmsOf(reference));
}

function rmsOf(values: Float32Array): number {
  let ss = 0;
  for (const v of values) ss += v * v;
  return Math.sqrt(ss / Math.max(1, values.length));
}

const KV_BLOCK = 16;
const NUM_BLOCKS = 257;

export async function goldenChecks(fixturesDir: string, notes: string[]): Promise<GpuCheck[]> {
  const fixtures = await loadGoldenFixtures(fixturesDir);
  const reason = goldenSkipReason(fixtures, fixturesDir);
  if (reason) {
    notes.push(`golden: ${reason}`);
    return [];
  }
  const noise = loadReferenceNoise(fixturesDir, notes);
  const checks: GpuCheck[] = [];
  for (const fx of fixtures) {
    const opts = { numKvBlocks: NUM_BLOCKS, kvBlockSize: KV_BLOCK };
    const cuda = await Engine.load(fx.dir, { ...opts, backend: 'cuda' });
    const cpu = await Engine.load(fx.dir, { ...opts, backend: 'cpu' });
    try {
      for (const [i, c] of fx.golden.cases.entries()) {
        const blocks = scatteredBlocks(Math.ceil((c.promptIds.length + fx.golden.maxNewTokens) / KV_BLOCK), i, NUM_BLOCKS);
        const got = await forcedLogits(cuda, c.promptIds, c.greedyIds, { blocks });
        const stored = new Map<number, Float32Array>(c.logits.map((l) => [l.step, Float32Array.from(l.values)]));
        let cpuRef: Float32Array[] | null = null;
        const flips: MeasuredFlip[] = [];
        for (let s = 0; s < c.greedyIds.length; s++) {
          if (top2(got[s]!).argmax === c.greedyIds[s]) continue;
          cpuRef ??= await forcedLogits(cpu, c.promptIds, c.greedyIds, { blocks });
          const ref = stored.get(s) ?? cpuRef[s]!;
          flips.push({ step: s, margin: top2(ref).margin, band: bf16FlipMargin(ref), rowRms: rmsOf(ref) });
        }
        const logitErrors = [...stored].map(([step, values]) => ({ step, error: relativeError(got[step]!, values) }));
        const verdict = judgeGoldenCase({ promptLength: c.promptIds.length, flips, logitErrors, routerRelativeMargins: c.routerRelativeMargins, referenceNoise: noise.get(fx.name)?.get(i) });
        const free = await generateGreedy(cuda, c.promptIds, fx.golden.maxNewTokens, { blocks });
        const freeSame = free.tokens.join(',') === c.greedyIds.join(',');
        checks.push({
          suite: 'golden',
          name: `${fx.name} case ${i} (bf16 rule: flips only inside the reference's bf16 noise band, transformers' measured bf16 noise, or after its routing near-ties)`,
          passed: verdict.passed,
          detail: `${verdict.detail}; free-running greedy ${freeSame ? 'equal' : 'diverges'}`,
        });
      }
    } finally {
      cuda.close();
      cpu.close();
    }
  }
  return checks;
}
