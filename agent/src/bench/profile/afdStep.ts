/**
 * `afd-bench afd-step`: the measured side of the planner's validation. An xAyF topology of
 * real role engines (dummy weights) in one process, joined over loopback TCP by the
 * product's FfnServer and AttentionLink; every attention rank decodes `batch` sequences at
 * `context` at once, with DBO (two stages) or without, and the step's wall time (all ranks)
 * is the TPOT. With --profile it prints the step simulator's prediction for the same shape
 * beside it.
 */
import { readFileSync } from 'node:fs';
import type { Command } from 'commander';
import { AttentionLink, FfnServer, type Engine } from '@afd/native';
import { freePortBlock } from '@afd/native/ports';
import { layerCosts, parseCostProfile, parseSharedDevice, resolveTopology, resolveRankConfig, simulateAfd } from '@afd/shared';
import { intFlag } from '../../util/intFlag.js';
import { decodePlan, holdingEventLoop, loadRoleEngine, median, prefill, type Prefilled, type RigOptions } from './rig.js';

export interface AfdStepOptions {
  topology: string;
  batch: number;
  context: number;
  dbo: boolean;
  steps: number;
  warmup: number;
  threads: number;
  arch: string;
  preset: string;
}

export interface AfdStepResult {
  topology: string;
  batchPerRank: number;
  context: number;
  dbo: boolean;
  measuredTpotMs: number;
  measuredTpotP10Ms: number;
  measuredTpotP90Ms: number;
  predictedTpotMs?: number;
  /** predicted / measured - 1. */
  error?: number;
}

export async function measureAfdStep(o: AfdStepOptions): Promise<AfdStepResult> {
  const topo = resolveTopology(o.topology);
  const x = topo.attention.ranks;
  const y = topo.ffn.ranks;
  const rig: RigOptions = { arch: o.arch, preset: o.preset, backend: 'cpu', threads: o.threads, device: 0, seed: 1, maxBatch: o.batch, maxTokensPerSeq: o.context + o.warmup + o.steps + 1 };
  const attn: Engine[] = [];
  const ffn: Engine[] = [];
  const servers: FfnServer[] = [];
  const links: AttentionLink[] = [];
  try {
    for (let a = 0; a < x; a++) attn.push(await loadRoleEngine(rig, 'attention'));
    for (let f = 0; f < y; f++) ffn.push(await loadRoleEngine(rig, 'ffn'));
    const base = await freePortBlock(y);
    const config = (role: 'attention' | 'ffn', rank: number) => resolveRankConfig({ afd: { role, topology: o.topology, rank, port: base, rendezvousTimeoutMs: 20_000 } });
    ffn.forEach((e, f) => servers.push(new FfnServer(e, config('ffn', f))));
    attn.forEach((e, a) => links.push(new AttentionLink(e, config('attention', a))));
    await Promise.all([...servers.map((s) => s.start()), ...links.map((l) => l.connect())]);
    const pre: Prefilled[] = [];
    for (const e of attn) pre.push(await prefill(e, rig, o.batch, o.context));
    let tokens = pre.map((p) => p.lastTokens.slice(0, o.batch));
    const wall: number[] = [];
    for (let i = 0; i < o.warmup + o.steps; i++) {
      const t = performance.now();
      const out = await Promise.all(attn.map((e, a) => e.step(decodePlan(pre[a]!, o.batch, i, o.dbo, tokens[a]!))));
      if (i >= o.warmup) wall.push(performance.now() - t);
      tokens = out.map((r) => Array.from(r.tokenIds));
    }
    const sorted = [...wall].sort((a, b) => a - b);
    const q = (p: number) => sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]!;
    return { topology: o.topology, batchPerRank: o.batch, context: o.context, dbo: o.dbo, measuredTpotMs: median(wall), measuredTpotP10Ms: q(0.1), measuredTpotP90Ms: q(0.9) };
  } finally {
    for (const l of links) await l.close({ shutdown: true });
    for (const s of servers) await s.stop();
    [...attn, ...ffn].forEach((e) => e.close());
  }
}

/**
 * The simulator's TPOT for the same shape from a profile (its measured tcp connector);
 * sharedDevice (e.g. cpu:2) predicts the ranks sharing that device, as they do in this
 * one-process rig.
 */
export function predictAfdStep(profileFile: string, o: Pick<AfdStepOptions, 'topology' | 'batch' | 'context' | 'dbo'>, sharedDevice?: string): number {
  const profile = parseCostProfile(readFileSync(profileFile, 'utf8'), profileFile);
  const topo = resolveTopology(o.topology);
  const device = sharedDevice ? parseSharedDevice(sharedDevice) : undefined;
  return simulateAfd(layerCosts(profile, 'profile'), { attention: topo.attention.ranks, ffn: topo.ffn.ranks, stages: o.dbo && o.batch >= 2 ? 2 : 1 }, { batchPerRank: o.batch, context: o.context }, device ? { device } : {}).tpotMs;
}

export function registerAfdStepBench(program: Command): void {
  program
    .command('afd-step')
    .description('TPOT of an xAyF topology of real CPU role engines over loopback TCP in one process, beside the planner prediction (--profile)')
    .option('--topology <xAyF>', 'topology', '1A1F')
    .option('--batch <n>', 'sequences per attention rank', '4')
    .option('--context <n>', 'prefilled tokens per sequence', '256')
    .option('--dbo', 'two stages (dual-batch overlap)')
    .option('--steps <n>', 'timed steps (median)', '10')
    .option('--warmup <n>', 'warm-up steps', '2')
    .option('--threads <n>', 'CPU threads per engine', '1')
    .option('--arch <arch>', 'architecture of the preset', 'qwen3_moe')
    .option('--preset <name>', 'model preset with dummy weights', 'tiny')
    .option('--profile <file>', 'predict the same shape from this profile (afd-bench profile)')
    .option('--shared-device <spec>', 'predict with the ranks sharing a device: cpu:<cores> (the engine threads of this rig on that many cores) or mps:attention=<pct>,ffn=<pct>')
    .action(async (f: Record<string, string | boolean | undefined>) => {
      const o: AfdStepOptions = {
        topology: String(f['topology']),
        batch: intFlag('--batch', String(f['batch']), 1),
        context: intFlag('--context', String(f['context']), 1),
        dbo: f['dbo'] === true,
        steps: intFlag('--steps', String(f['steps']), 1),
        warmup: intFlag('--warmup', String(f['warmup']), 0),
        threads: intFlag('--threads', String(f['threads']), 0),
        arch: String(f['arch']),
        preset: String(f['preset']),
      };
      const r = await holdingEventLoop(() => measureAfdStep(o));
      if (typeof f['profile'] === 'string') {
        r.predictedTpotMs = predictAfdStep(f['profile'], o, typeof f['sharedDevice'] === 'string' ? f['sharedDevice'] : undefined);
        r.error = r.predictedTpotMs / r.measuredTpotMs - 1;
      }
      process.stdout.write(`${JSON.stringify(r)}\n`);
    });
}
