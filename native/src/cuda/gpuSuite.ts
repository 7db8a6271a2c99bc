/**
 * The GPU test suite (`npm run test:gpu`): the CUDA op conformance suite against the CPU
 * backend, the engine on the CUDA backend against the CPU backend on tiny models of every
 * architecture (greedy tokens equal, logits close), expert parallelism with two FFN ranks
 * on one GPU, and the golden fixtures on CUDA.
 * Runs where a CUDA device is visible; elsewhere it reports why it skipped.
 */
import { rm } from 'node:fs/promises';
import { goldenSkipReason, loadGoldenFixtures, relativeError } from '../checkpoint/golden.js';
import { Engine } from '../engine.js';
import { tempDir, tinyQwen3MoeConfig, writeTestModel } from '../checkpoint/testing.js';
import { generateGreedy, roleSpec, scatteredBlocks, tinyConfigs, writeTinyModel } from '../engineTesting.js';
import { loadAddon, type NativeAddon } from '../index.js';
import { expertGemmChecks } from './expertGemmCheck.js';
import { cudaLogitTolerance, type GpuCheck } from './gpuCheck.js';
import { engineGraphChecks } from './engineGraphCheck.js';
import { engineExpertGemmChecks } from './engineExpertGemmCheck.js';
import { expertParallelChecks } from './expertParallelCheck.js';
import { kvSizingChecks } from './kvSizingCheck.js';
import { parseModelConfig } from '../checkpoint/config.js';


export interface GpuSuiteReport {
  /** Why nothing ran (no CUDA build, no device); null when the suite ran. */
  skipped: string | null;
  device: string;
  checks: GpuCheck[];
  /** Suites that had nothing to run, with the reason. */
  notes: string[];
}


/** Why the suite cannot run here, or null. */
export function gpuSkipReason(addon: Pick<NativeAddon, 'probe'>): string | null {
  const p = addon.probe();
  if (p.variant !== 'cuda') return 'the addon was built without CUDA (AFD_CUDA=off or no nvcc): GPU tests skipped';
  if (p.devices.length === 0) return `no CUDA device visible (${p.cudaError || 'none found'}): GPU tests skipped`;
  return null;
}

function conformance(addon: NativeAddon, seed: number): GpuCheck[] {
  return addon.cudaConformance({ seed }).map((c) => ({
    suite: 'conformance',
    name: `${c.op} [${c.shape}] ${c.dtype}`,
    passed: c.passed,
    detail: `relError ${c.relError.toExponential(2)} (bound ${c.bound.toExponential(1)}), unwritten ${c.unwritten}, mismatches ${c.mismatches}`,
  }));
}

async function engineVsCpu(): Promise<GpuCheck[]> {
  const checks: GpuCheck[] = [];
  for (const arch of Object.keys(tinyConfigs)) {
    const dir = await writeTinyModel(arch, 7);
    try {
      const spec = await roleSpec(dir, 'colocated');
      const prompt = [3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5];
      const blocks = scatteredBlocks(4, 1, 31);
      const opts = { numKvBlocks: 31, kvBlockSize: 4 };
      const cpu = await Engine.load(spec, { ...opts, backend: 'cpu' });
      const cuda = await Engine.load(spec, { ...opts, backend: 'cuda' });
      try {
        const a = await generateGreedy(cpu, prompt, 5, { chunk: 4, blocks });
        const b = await generateGreedy(cuda, prompt, 5, { chunk: 4, blocks });
        let worst = 0;
        for (let i = 0; i < a.logits.length; i++) worst = Math.max(worst, relativeError(b.logits[i]!, a.logits[i]!));
        const same = a.tokens.join(',') === b.tokens.join(',');
        checks.push({
          suite: 'engine',
          name: `${arch}: CUDA engine vs CPU engine (prefill in chunks of 4, 5 decode steps)`,
          passed: same && worst <= cudaLogitTolerance,
          detail: `tokens ${same ? 'equal' : `differ: cpu ${a.tokens} cuda ${b.tokens}`}; worst logits relError ${worst.toExponential(2)}`,
        });
      } finally {
        cpu.close();
        cuda.close();
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }
  return checks;
}

/** The fused decode path (benchmarked by afd-bench decode) against the CPU engine, graphs on and off. */
async function fusedDecoder(addon: NativeAddon): Promise<GpuCheck[]> {
  const dir = await tempDir('afd-fused-');
  try {
    const config = tinyQwen3MoeConfig({ hidden_size: 128, head_dim: 64, num_attention_heads: 8, num_key_value_heads: 2, mlp_only_layers: [], moe_intermediate_size: 48, num_experts: 10, num_experts_per_tok: 3, vocab_size: 96 });
    await writeTestModel(dir, config, { seed: 5 });
    const spec = await roleSpec(dir, 'colocated');
    const prompt = [5, 17, 3, 88, 41, 9, 60];
    const maxNewTokens = 6;
    const cpu = await Engine.load(spec, { backend: 'cpu', numKvBlocks: 31, kvBlockSize: 4 });
    let ref: Awaited<ReturnType<typeof generateGreedy>>;
    try {
      ref = await generateGreedy(cpu, prompt, maxNewTokens, { blocks: scatteredBlocks(4, 2, 31) });
    } finally {
      cpu.close();
    }
    const graph = addon.cudaDecoderGenerate(spec, { promptIds: prompt, maxNewTokens, graphs: true });
    const eager = addon.cudaDecoderGenerate(spec, { promptIds: prompt, maxNewTokens, graphs: false });
    const vocab = spec.config.vocabSize;
    let worst = 0;
    for (let i = 0; i < maxNewTokens; i++) worst = Math.max(worst, relativeError(graph.logits.subarray(i * vocab, (i + 1) * vocab), ref.logits[i]!));
    const same = graph.tokens.join(',') === ref.tokens.join(',');
    const replay = graph.tokens.join(',') === eager.tokens.join(',') && graph.logits.every((v, i) => v === eager.logits[i]);
    return [
      {
        suite: 'decoder',
        name: 'fused decoder (CUDA graph) vs CPU engine, tiny all-MoE qwen3_moe, head dim 64',
        passed: same && worst <= cudaLogitTolerance,
        detail: `tokens ${same ? 'equal' : `differ: cpu ${ref.tokens} fused ${graph.tokens}`}; worst logits relError ${worst.toExponential(2)}`,
      },
      { suite: 'decoder', name: 'fused decoder: graph replay equals eager launch bit for bit', passed: replay, detail: replay ? 'identical tokens and logits' : `graph ${graph.tokens} eager ${eager.tokens}` },
    ];
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/**
 * AFD / DBO split exactness: a decode step cut into two stages (attention half, FFN half,
 * combine per stage) on one GPU gives the unsplit step's greedy tokens, at 12 rows (6-row
 * stages: fused router, attention kernel family), 64 rows (32-row
 * stages: small-row kernels vs cuBLAS, attention split count) and 256 rows (128-row stages:
 * cuBLAS's M), on Qwen3-30B-A3B layer shapes (4 layers, synthetic weights, random KV).
 * The exact path (cuBLAS at the step's M) must match; the plain path is reported only.
 */
export function splitStages(addon: NativeAddon): GpuCheck[] {
  const json = tinyQwen3MoeConfig({ hidden_size: 2048, head_dim: 128, num_attention_heads: 32, num_key_value_heads: 4, num_hidden_layers: 4, mlp_only_layers: [], moe_intermediate_size: 768, num_experts: 128, num_experts_per_tok: 8, vocab_size: 151936, norm_topk_prob: true });
  const spec = { config: parseModelConfig('qwen3-30b-a3b-4-layers', json), role: 'colocated' as const, computeGateOnAttention: false, files: [], tensors: [] };
  const checks: GpuCheck[] = [];
  // 12 rows: 6-row stages cross the fused-router (<= 8 rows) and tensor-core attention (>= 8 queries) thresholds.
  for (const rows of [12, 64, 256]) {
    for (const exactGemm of rows > 48 ? [true, false] : [true]) {
      const r = addon.afdSplitStageCheck(spec, { rows, exactGemm, steps: 4, context: 512 });
      const ok = r.mismatchedSteps === 0;
      checks.push({
        suite: 'decoder',
        name: `split stages ${r.stageRows.join('+')} vs unsplit ${rows} rows, cuBLAS at the ${exactGemm ? "step's" : "stage's"} M${exactGemm ? '' : ' (informational)'}`,
        passed: exactGemm ? ok : true,
        detail: `${r.steps} steps: mismatched steps ${r.mismatchedSteps} (tokens ${r.mismatchedTokens}); logits bit-equal in ${r.logitStepsBitEqual}/${r.steps} steps, max |diff| ${r.maxLogitAbsDiff.toExponential(2)}`,
      });
    }
  }
  return checks;
}

async function golden(fixturesDir: string, notes: string[]): Promise<GpuCheck[]> {
  const fixtures = await loadGoldenFixtures(fixturesDir);
  const reason = goldenSkipReason(fixtures, fixturesDir);
  if (reason) {
    notes.push(`golden: ${reason}`);
    return [];
  }
  const checks: GpuCheck[] = [];
  for (const fx of fixtures) {
    const engine = await Engine.load(fx.dir, { backend: 'cuda', numKvBlocks: 257, kvBlockSize: 16 });
    try {
      for (const [i, c] of fx.golden.cases.entries()) {
        const need = Math.ceil((c.promptIds.length + fx.golden.maxNewTokens) / 16);
        const blocks = scatteredBlocks(need, i, 257);
        const out = await generateGreedy(engine, c.promptIds, fx.golden.maxNewTokens, { blocks });
        const tol = Math.max(fx.golden.relTolerance, cudaLogitTolerance);
        let worst = 0;
        for (const l of c.logits) worst = Math.max(worst, relativeError(out.logits[l.step]!, l.values));
        const same = out.tokens.join(',') === c.greedyIds.join(',');
        checks.push({
          suite: 'golden',
          name: `${fx.name} case ${i}`,
          passed: same && worst <= tol,
          detail: `tokens ${same ? 'equal' : `differ: got ${out.tokens} want ${c.greedyIds}`}; worst logits relError ${worst.toExponential(2)} (tolerance ${tol})`,
        });
      }
    } finally {
      engine.close();
    }
  }
  return checks;
}

/** Runs every GPU suite; never throws for a failed check (see `passed`). */
export async function runGpuSuite(opts: { fixturesDir: string; seed?: number; addon?: NativeAddon }): Promise<GpuSuiteReport> {
  const addon = opts.addon ?? loadAddon();
  const skipped = gpuSkipReason(addon);
  const device = addon.probe().devices[0]?.name ?? '';
  if (skipped) return { skipped, device, checks: [], notes: [] };
  const notes: string[] = [];
  const checks = [
    ...conformance(addon, opts.seed ?? 1),
    ...(await engineVsCpu()),
    ...(await engineGraphChecks()),
    ...(await kvSizingChecks()),
    ...(await fusedDecoder(addon)),
    ...splitStages(addon),
    ...(await golden(opts.fixturesDir, notes)),
    ...expertGemmChecks(addon, notes),
    ...(await engineExpertGemmChecks()),
    ...(await expertParallelChecks()),
  ];
  return { skipped: null, device, checks, notes };
}
