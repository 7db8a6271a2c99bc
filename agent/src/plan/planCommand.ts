/**
 * `afd-agent plan`: which way to serve a model on N GPUs, predicted by the step simulator
 * (shared/src/plan) from a cost profile: one measured elsewhere (--profile), or measured
 * here now on the local backend (afd-bench profile's default grids, dummy weights).
 */
import { readFileSync } from 'node:fs';
import type { Command } from 'commander';
import { LINK_PRESETS, findLinkPreset, layerCosts, memoryModel, parseCostProfile, parseSharedDevice, plan, type CostProfile, type GateSide, type LinkPreset } from '@afd/shared';
import { PROFILE_DEFAULTS, runProfile } from '../bench/profile/command.js';
import { holdingEventLoop } from '../bench/profile/rig.js';
import { intFlag } from '../util/intFlag.js';
import { formatPlanTable, planReport, type PlanReport } from './planReport.js';
import { formatHeteroTable, isHeteroGpus, runHeteroPlan, type HeteroFlags } from './heteroPlan.js';

export interface PlanFlags {
  gpus: string;
  tpotMs: string;
  model: string;
  profile?: string;
  link: string;
  context: string;
  maxBatch: string;
  stages: string;
  backend: string;
  top: string;
  /** Memory of one GPU, GiB (overrides the profile's device memory). */
  gpuMemGib?: string;
  /** Ranks sharing devices: cpu:<cores> or mps:attention=<pct>,ffn=<pct>[,alpha=<a>]. */
  sharedDevice?: string;
  /** Gate sides to try for an MoE model: ffn, attention or both. */
  gate?: string;
  /** EP ranks taken as balanced where the EP FFN is scaled (no load imbalance: epImbalance.ts). */
  epBalanced?: boolean;
  json?: boolean;
}

function gateSides(v: string | undefined): GateSide[] {
  const sides = (v ?? 'ffn,attention').split(',').map((s) => s.trim());
  for (const s of sides) if (s !== 'ffn' && s !== 'attention') throw new Error(`--gate takes ffn, attention or both (ffn,attention), got "${s}"`);
  return sides as GateSide[];
}

/** The profile of --profile, or one measured now for --model (arch/preset with dummy weights). */
async function profileFor(flags: PlanFlags, log: (line: string) => void): Promise<CostProfile> {
  if (flags.profile) {
    const profile = parseCostProfile(readFileSync(flags.profile, 'utf8'), flags.profile);
    if (profile.model.name !== flags.model) throw new Error(`--profile ${flags.profile} was measured on ${profile.model.name}, not --model ${flags.model}: measure ${flags.model} with afd-bench profile, or pass --model ${profile.model.name}`);
    return profile;
  }
  const [arch, preset] = flags.model.split('/');
  if (!arch || !preset) throw new Error(`--model takes arch/preset (a preset of afd-agent make-model --list, e.g. qwen3_moe/tiny), got "${flags.model}"`);
  log(`no --profile: measuring ${flags.model} on ${flags.backend} now (afd-bench profile's default grids)`);
  return runProfile({ ...PROFILE_DEFAULTS, arch, preset, backend: flags.backend }, log);
}

export async function runPlan(flags: PlanFlags, log: (line: string) => void): Promise<PlanReport> {
  const gpus = intFlag('--gpus', flags.gpus, 1, 4096);
  const tpotMs = Number(flags.tpotMs);
  if (!Number.isFinite(tpotMs) || tpotMs <= 0) throw new Error(`--tpot-ms must be a positive number of milliseconds, got "${flags.tpotMs}"`);
  const stageCounts = flags.stages.split(',').map((s) => intFlag('--stages', s.trim(), 1, 64));
  const link: LinkPreset | 'profile' = flags.link === 'profile' ? 'profile' : findLinkPreset(flags.link);
  const gpuMemGib = flags.gpuMemGib === undefined ? undefined : Number(flags.gpuMemGib);
  if (gpuMemGib !== undefined && !(gpuMemGib > 0)) throw new Error(`--gpu-mem-gib must be a positive number of GiB, got "${flags.gpuMemGib}"`);
  const device = flags.sharedDevice ? parseSharedDevice(flags.sharedDevice) : undefined;
  const gates = gateSides(flags.gate);
  const profile = await profileFor(flags, log);
  const costs = { ...layerCosts(profile, link), ...(flags.epBalanced ? { epBalanced: true } : {}) };
  const memory = memoryModel(profile, gpuMemGib);
  const search = { gpus, tpotMs, context: intFlag('--context', flags.context, 1), maxBatch: intFlag('--max-batch', flags.maxBatch, 1, 65536), stageCounts, gateSides: gates, ...(device ? { device } : {}) };
  const query = { ...search, model: flags.model, link: flags.link };
  return planReport(plan(costs, { ...search, memory }), query, profile, costs.linkSource, memory);
}

export function registerPlan(program: Command): void {
  program
    .command('plan')
    .description('rank ways to serve a model on N GPUs (xAyF, micro-batches, replicas, or colocated replicas) by predicted tokens/s per GPU at a TPOT target')
    .requiredOption('--gpus <n>', 'GPUs of the cluster: a count (8), or card kinds (h200:8,h100:16: each kind priced by --profile card=file or, without one, by the roofline of its published figures)')
    .requiredOption('--tpot-ms <ms>', 'TPOT target, ms')
    .requiredOption('--model <arch/preset>', 'the model (the profile must be of it), e.g. qwen3_moe/tiny')
    .option('--profile <file>', 'cost profile from afd-bench profile (default: measure the model here now); with card kinds in --gpus: card=file, repeated', (v: string, prev?: string | string[]) => (prev === undefined ? v : [prev, v].flat()))
    .option('--price <list>', 'with card kinds in --gpus: price per GPU of each kind, card=number,... (ranks also by tok/s per unit of price)')
    .option('--link <name>', `A<->F link: profile (the connector measured in the profile) or a preset with published figures: ${LINK_PRESETS.map((l) => l.name).join(', ')}`, 'profile')
    .option('--context <n>', 'context length of every sequence', '256')
    .option('--max-batch <n>', 'largest batch per attention rank (or replica) to try; powers of two up to it', '256')
    .option('--stages <list>', 'micro-batch counts to try for AFD (1 = none, 2 = DBO)', '1,2,4')
    .option('--backend <b>', 'backend to measure on when there is no --profile', 'cpu')
    .option('--gpu-mem-gib <n>', "memory of one GPU, GiB: weights + KV per GPU bound the batch (default: the profile's device memory)")
    .option('--shared-device <spec>', 'ranks sharing devices: cpu:<cores> (the --gpus are engine threads on that many cores) or mps:attention=<pct>,ffn=<pct>[,alpha=<0..1>] (xAyF on x GPUs, SM shares per role)')
    .option('--gate <sides>', 'MoE: where the router runs, sides to try (ffn, attention)', 'ffn,attention')
    .option('--ep-balanced', "MoE: take EP ranks as perfectly balanced where the EP FFN is scaled (default: the busiest rank's rows under uniform routing)")
    .option('--top <n>', 'rows of the table', '12')
    .option('--json', 'print the report as JSON instead of the table')
    .action(async (flags: PlanFlags) => {
      if (isHeteroGpus(flags.gpus)) {
        const hetero = runHeteroPlan(flags as unknown as HeteroFlags);
        process.stdout.write(flags.json ? `${JSON.stringify(hetero, null, 2)}\n` : `${formatHeteroTable(hetero, intFlag('--top', flags.top, 1))}\n`);
        return;
      }
      if ((flags as { price?: string }).price !== undefined) throw new Error('--price needs card kinds in --gpus (h200:8,h100:16 --price h200=3.5,h100=2.2)');
      if (Array.isArray(flags.profile)) throw new Error('--profile is repeated only with card kinds in --gpus (h200:8,h100:16 --profile h200=file)');
      const report = await holdingEventLoop(() => runPlan(flags, (line) => process.stderr.write(`afd-agent plan: ${line}\n`)));
      process.stdout.write(flags.json ? `${JSON.stringify(report, null, 2)}\n` : `${formatPlanTable(report, intFlag('--top', flags.top, 1))}\n`);
    });
}
