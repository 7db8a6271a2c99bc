/**
 * `afd-bench profile`: the planner's cost curves on the local backend and a model preset
 * with dummy weights (measure.ts), written as a versioned profile (shared/src/plan/profile.ts)
 * that `afd-agent plan --profile` reads. The default grids keep a CPU run well under a minute.
 */
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { cpus, loadavg, release, totalmem } from 'node:os';
import type { Command } from 'commander';
import { AFD_CONNECTORS, PROFILE_VERSION, afdConnectorSchema, costProfileSchema, type AfdConnector, type ConnectorCurve, type CostProfile } from '@afd/shared';
import { intFlag } from '../../util/intFlag.js';
import { gitCommit } from '../cliArgs.js';
import { measureAttention, measureConnector, measureFfn, measureFfnAttached } from './measure.js';
import { dummyLoadSpec } from '@afd/native/checkpoint';
import { kvBytesPerStep } from '../stepFloor.js';
import { holdingEventLoop, rigModelConfig, type RigOptions } from './rig.js';

export interface ProfileCliOptions {
  arch: string;
  preset: string;
  backend: string;
  threads: string;
  device: string;
  batches: string;
  contexts: string;
  tokens: string;
  linkBatches: string;
  connectors: string;
  steps: string;
  warmup: string;
  out?: string;
}

/** The default grids (a CPU run of the tiny preset takes about 15 s on two cores). */
export const PROFILE_DEFAULTS = { threads: '1', device: '0', batches: '1,4,16', contexts: '16,256', tokens: '1,4,16,64', linkBatches: '1,16,64', connectors: 'tcp', steps: '5', warmup: '2' } as const;

const intList = (flag: string, v: string): number[] => v.split(',').map((x) => intFlag(flag, x.trim(), 1));

/** The card name, driver and memory (nvidia-smi), or the CPU model, kernel release and host RAM. */
function deviceOf(backend: 'cpu' | 'cuda', device: number): { device: string; driver: string; deviceMemoryBytes?: number } {
  if (backend === 'cpu') return { device: cpus()[0]?.model.trim() ?? 'unknown CPU', driver: `linux ${release()}`, deviceMemoryBytes: totalmem() };
  try {
    const line = execFileSync('nvidia-smi', ['--query-gpu=name,driver_version,memory.total', '--format=csv,noheader,nounits', `--id=${device}`], { encoding: 'utf8' }).trim();
    const [name, driver, mib] = line.split(',').map((s) => s.trim());
    const memory = Number(mib) * 1024 ** 2;
    return { device: name ?? 'unknown GPU', driver: driver ?? 'unknown', ...(memory > 0 ? { deviceMemoryBytes: memory } : {}) };
  } catch {
    return { device: 'unknown GPU (nvidia-smi failed)', driver: 'unknown' };
  }
}

/** The model block of the profile: sizes, the weights each role holds, KV bytes per token, the MoE shape. */
function modelBlock(o: ProfileCliOptions, config: ReturnType<typeof rigModelConfig>, wireBytesPerElement: number): CostProfile['model'] {
  const colocated = dummyLoadSpec(config, 'colocated', { seed: 1 });
  return {
    name: `${o.arch}/${o.preset}`,
    numLayers: config.numLayers,
    hiddenSize: config.hiddenSize,
    wireBytesPerElement,
    weightBytes: colocated.residentBytes,
    attentionWeightBytes: dummyLoadSpec(config, 'attention', { seed: 1 }).residentBytes,
    ffnWeightBytes: dummyLoadSpec(config, 'ffn', { seed: 1 }).residentBytes,
    // The KV cache holds the activation type: fp32 on the CPU backend, bf16 on CUDA (as the wire).
    kvBytesPerToken: kvBytesPerStep(colocated.spec, 1, 1, wireBytesPerElement),
    ...(config.numExperts > 0 ? { moe: { numExperts: config.numExperts, topK: config.numExpertsPerTok } } : {}),
  };
}

export async function runProfile(o: ProfileCliOptions, log: (line: string) => void): Promise<CostProfile> {
  if (o.backend !== 'cpu' && o.backend !== 'cuda') throw new Error(`--backend takes cpu or cuda, got "${o.backend}"`);
  const backend = o.backend;
  const batches = intList('--batches', o.batches);
  const contexts = intList('--contexts', o.contexts);
  const tokens = intList('--tokens', o.tokens);
  const linkBatches = intList('--link-batches', o.linkBatches);
  const connectors = (o.connectors === 'none' ? [] : o.connectors.split(',')).map((c) => {
    const r = afdConnectorSchema.safeParse(c.trim());
    if (!r.success) throw new Error(`--connectors: "${c}" is not a connector (${AFD_CONNECTORS.join(', ')})`);
    return r.data;
  });
  const reps = { warmup: intFlag('--warmup', o.warmup, 0), steps: intFlag('--steps', o.steps, 1) };
  const device = intFlag('--device', o.device, 0);
  const rig: RigOptions = {
    arch: o.arch,
    preset: o.preset,
    backend,
    threads: intFlag('--threads', o.threads, 0),
    device,
    seed: 1,
    maxBatch: Math.max(...batches, ...linkBatches),
    maxTokensPerSeq: Math.max(...contexts, 16) + reps.warmup + reps.steps + 1,
  };
  const config = rigModelConfig(rig);
  const t0 = performance.now();
  log(`attention half: batches ${batches.join(',')} x contexts ${contexts.join(',')}`);
  const attention = await measureAttention(rig, batches, contexts, reps);
  log(`FFN half: tokens ${tokens.join(',')}`);
  // CUDA: the FFN's device time inside decode steps (ffnForward from JS pays a host round trip per layer).
  // Its sequences hold only a short context (the FFN's time does not depend on it), so the KV of
  // max(tokens) sequences stays small beside the whole model's weights.
  const ffnContext = 16;
  const ffnRig = { ...rig, maxBatch: Math.max(...tokens), maxTokensPerSeq: ffnContext + reps.warmup + reps.steps + 1 };
  const ffn = backend === 'cuda' ? await measureFfnAttached(ffnRig, tokens, ffnContext, reps) : await measureFfn(rig, tokens, reps);
  // Hidden states cross in fp32 on the CPU backend and bf16 on CUDA.
  const wireBytesPerElement = backend === 'cpu' ? 4 : 2;
  const curves: ConnectorCurve[] = [];
  for (const connector of connectors as AfdConnector[]) {
    log(`connector ${connector}: batches ${linkBatches.join(',')}`);
    try {
      curves.push({ connector, points: await measureConnector(rig, connector, linkBatches, Math.min(...contexts), wireBytesPerElement, reps) });
    } catch (e) {
      log(`connector ${connector} skipped: ${e instanceof Error ? e.message : String(e)}`);
    }
  }
  log(`measured in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  return costProfileSchema.parse({
    version: PROFILE_VERSION,
    measuredAt: new Date().toISOString(),
    backend,
    ...deviceOf(backend, device),
    threads: backend === 'cpu' ? rig.threads || cpus().length : 0,
    host: { cpus: cpus().length, loadAverage1m: loadavg()[0] ?? 0 },
    commit: gitCommit(),
    model: modelBlock(o, config, wireBytesPerElement),
    attention,
    ffn,
    connectors: curves,
  });
}

export function registerProfileBench(program: Command): void {
  program
    .command('profile')
    .description("the planner's cost curves (attention half vs batch and context, FFN half vs tokens, connector vs bytes) as a versioned JSON profile")
    .option('--arch <arch>', 'architecture of the preset', 'qwen3_moe')
    .option('--preset <name>', 'model preset with dummy weights (agent/src/model/presets.ts)', 'tiny')
    .option('--backend <b>', 'cpu or cuda', 'cpu')
    .option('--threads <n>', 'CPU threads per engine (0 = all cores)', PROFILE_DEFAULTS.threads)
    .option('--device <n>', 'CUDA device index', PROFILE_DEFAULTS.device)
    .option('--batches <list>', 'attention-half batch sizes', PROFILE_DEFAULTS.batches)
    .option('--contexts <list>', 'attention-half context lengths', PROFILE_DEFAULTS.contexts)
    .option('--tokens <list>', 'FFN-half tokens per step', PROFILE_DEFAULTS.tokens)
    .option('--link-batches <list>', 'connector: batch sizes (bytes = batch x hidden x wire bytes)', PROFILE_DEFAULTS.linkBatches)
    .option('--connectors <list>', `connectors to time (${AFD_CONNECTORS.join(', ')}), or none`, PROFILE_DEFAULTS.connectors)
    .option('--steps <n>', 'timed steps per point (median)', PROFILE_DEFAULTS.steps)
    .option('--warmup <n>', 'warm-up steps per point', PROFILE_DEFAULTS.warmup)
    .option('--out <file>', 'also write the profile here')
    .action(async (o: ProfileCliOptions) => {
      const profile = await holdingEventLoop(() => runProfile(o, (line) => process.stderr.write(`afd-bench profile: ${line}\n`)));
      const json = JSON.stringify(profile, null, 2);
      if (o.out) writeFileSync(o.out, `${json}\n`);
      process.stdout.write(`${json}\n`);
    });
}
