/**
 * `afd-bench expert-gemm`: the MoE expert GEMMs of one layer (gate + up with SiLU, then
 * down) on a preset's expert shape with random bf16 weights generated on the GPU: our
 * grouped tensor-core kernel against cuBLAS grouped GEMM (with and without the host copy
 * of the expert counts it needs) and one cuBLAS call per expert, at several batch sizes.
 * Table on stderr, JSON on stdout (and --json-out). The decision rule is in expertGemmReport.ts.
 */
import { writeFileSync } from 'node:fs';
import type { Command } from 'commander';
import { loadAddon } from '@afd/native';
import { parseModelConfig } from '@afd/native/checkpoint';
import { findPreset, presetConfigJson } from '../model/presets.js';
import { intFlag } from '../util/intFlag.js';
import { gitCommit } from './cliArgs.js';
import { buildExpertGemmReport, formatExpertGemmTable } from './expertGemmReport.js';

interface ExpertGemmCliOptions {
  arch: string;
  preset: string;
  batches: string;
  layers: string;
  iterations: string;
  warmup: string;
  seed: string;
  routing: string;
  perExpert: boolean;
  device: string;
  jsonOut?: string;
}

export function registerExpertGemmBench(program: Command): void {
  program
    .command('expert-gemm')
    .description('MoE expert GEMMs on one GPU: our grouped kernel vs cuBLAS grouped GEMM, random weights of a preset shape')
    .option('--arch <arch>', 'architecture of the preset', 'qwen3_moe')
    .option('--preset <name>', 'model preset whose expert shape is used (agent/src/model/presets.ts)', 'qwen3-30b-a3b')
    .option('--batches <list>', 'comma-separated token counts', '1,8,64,256,512')
    .option('--layers <n>', 'weight copies cycled through (keeps the weights out of L2)', '4')
    .option('--iterations <n>', 'timed iterations per batch and variant (median reported)', '50')
    .option('--warmup <n>', 'warm-up iterations per batch and variant', '5')
    .option('--seed <n>', 'seed of the weights and the routing', '1')
    .option('--routing <kind>', 'uniform (top-k of iid logits) or skewed (per-expert popularity bias)', 'uniform')
    .option('--no-per-expert', 'skip the one-cuBLAS-call-per-expert baseline')
    .option('--device <n>', 'CUDA device index', '0')
    .option('--json-out <file>', 'also write the JSON report here')
    .action((o: ExpertGemmCliOptions) => {
      if (o.routing !== 'uniform' && o.routing !== 'skewed') throw new Error(`--routing must be uniform or skewed, got "${o.routing}"`);
      const routing: 'uniform' | 'skewed' = o.routing;
      const batches = o.batches.split(',').map((b) => intFlag('--batches', b.trim(), 1));
      const config = parseModelConfig(`${o.arch}/${o.preset}`, presetConfigJson(findPreset(o.arch, o.preset)));
      if (config.numExperts <= 0) throw new Error(`preset ${o.arch}/${o.preset} has no experts`);
      const shape = { numExperts: config.numExperts, hidden: config.hiddenSize, intermediate: config.moeIntermediateSize, topK: config.numExpertsPerTok };
      const layers = intFlag('--layers', o.layers, 1);
      const warmup = intFlag('--warmup', o.warmup, 0);
      const iterations = intFlag('--iterations', o.iterations, 1);
      process.stderr.write(`afd-bench expert-gemm: ${o.arch}/${o.preset} experts ${shape.numExperts} top-${shape.topK}, hidden ${shape.hidden}, intermediate ${shape.intermediate}, batches ${batches.join(',')}\n`);
      const result = loadAddon().cudaExpertGemmBench({
        ...shape,
        batches,
        layers,
        warmup,
        iterations,
        seed: intFlag('--seed', o.seed, 0),
        routing,
        perExpert: o.perExpert,
        device: intFlag('--device', o.device, 0),
      });
      const report = buildExpertGemmReport(result, {
        model: `${o.arch}/${o.preset}`,
        shape,
        routing,
        layers,
        warmup,
        iterations,
        commit: gitCommit(),
        command: `afd-bench expert-gemm ${process.argv.slice(3).join(' ')}`.trim(),
      });
      process.stderr.write(`${formatExpertGemmTable(report)}\n`);
      const json = JSON.stringify(report, null, 2);
      if (o.jsonOut) writeFileSync(o.jsonOut, `${json}\n`);
      process.stdout.write(`${json}\n`);
    });
}
