/**
 * `afd-bench cpu-engine`: prefill and decode throughput of the native engine (colocated,
 * CPU backend) on a model directory (default: a fresh tiny Qwen3-MoE from make-model).
 * Prints one JSON report. Decode figures come with their memory-bandwidth floor: the
 * weight bytes a decode step must read over the host copy bandwidth measured in the same
 * run, so machines compare by `achievedOverFloor`.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Command } from 'commander';
import { Engine } from '@afd/native';
import { buildStepPlan, type PlanSeq } from '@afd/shared';
import { makeModel } from '../model/makeModel.js';
import { intFlag } from '../util/intFlag.js';
import { weightBytesPerStep } from './stepFloor.js';

/** Options of runCpuEngineBench. */
export interface CpuEngineBenchOptions {
  /** Model directory; default: make the tiny qwen3_moe preset in a temp dir. */
  modelDir?: string;
  threads: number;
  promptLen: number;
  decodeSteps: number;
  batchSizes: number[];
  /** Repetitions of the prefill measurement (median reported). */
  repeats: number;
  /** Decode sampling (temperature 0 = greedy). */
  temperature: number;
  topP: number;
}

/** One decode measurement. */
export interface DecodeFigure {
  batch: number;
  msPerStep: number;
  tokensPerSecond: number;
  /** Weight bytes one step must read (dense + attention + LM head + expected distinct experts). */
  weightBytesPerStep: number;
  /** weightBytesPerStep / measured copy bandwidth, ms. */
  floorMs: number;
  /** floorMs / msPerStep (1 = at the bandwidth floor). */
  achievedOverFloor: number;
}

/** The report. */
export interface CpuEngineBenchReport {
  bench: 'cpu-engine';
  model: string;
  arch: string;
  threads: number;
  residentWeightBytes: number;
  /** Host memcpy bandwidth, bytes read + written per second, GB/s. */
  copyBandwidthGBps: number;
  prefill: { promptTokens: number; ms: number; tokensPerSecond: number };
  sampling: { temperature: number; topP: number };
  decode: DecodeFigure[];
}

const median = (v: number[]): number => [...v].sort((a, b) => a - b)[Math.floor(v.length / 2)]!;

function copyBandwidthGBps(): number {
  const bytes = 256 * 1024 * 1024;
  const a = Buffer.alloc(bytes, 1);
  const b = Buffer.alloc(bytes);
  const times: number[] = [];
  for (let i = 0; i < 5; i++) {
    const t0 = performance.now();
    a.copy(b);
    times.push(performance.now() - t0);
  }
  return (2 * bytes) / (median(times) / 1000) / 1e9; // bytes read + bytes written
}


export async function runCpuEngineBench(o: CpuEngineBenchOptions): Promise<CpuEngineBenchReport> {
  let dir = o.modelDir;
  let tmp: string | undefined;
  if (!dir) {
    tmp = await mkdtemp(join(tmpdir(), 'afd-bench-'));
    dir = join(tmp, 'tiny-qwen3-moe');
    await makeModel({ arch: 'qwen3_moe', preset: 'tiny', outDir: dir, seed: 0 });
  }
  const maxBatch = Math.max(...o.batchSizes);
  const blockSize = 16;
  const blocksPerSeq = Math.ceil((o.promptLen + o.decodeSteps + 1) / blockSize);
  const engine = await Engine.load(dir, { threads: o.threads, kvBlockSize: blockSize, numKvBlocks: blocksPerSeq * maxBatch });
  try {
    const vocab = engine.info.vocabSize;
    const prompt = Array.from({ length: o.promptLen }, (_, i) => (i * 7919 + 13) % vocab);
    const blocks = (seq: number): number[] => Array.from({ length: blocksPerSeq }, (_, j) => seq * blocksPerSeq + j);
    const prefillMs: number[] = [];
    for (let r = 0; r < o.repeats + 1; r++) {
      const out = await engine.step(buildStepPlan([{ tokenIds: prompt, numCached: 0, blockTable: blocks(0) }]));
      if (r > 0) prefillMs.push(out.stepTimeMs); // the first run warms up
    }
    const decode: DecodeFigure[] = [];
    const bw = copyBandwidthGBps();
    for (const batch of o.batchSizes) {
      const seqs: PlanSeq[] = Array.from({ length: batch }, (_, s) => ({ tokenIds: prompt, numCached: 0, blockTable: blocks(s), sample: false }));
      await engine.step(buildStepPlan(seqs));
      const times: number[] = [];
      for (let step = 0; step < o.decodeSteps; step++) {
        const plan = buildStepPlan(
          Array.from({ length: batch }, (_, s) => ({ tokenIds: [(step * 31 + s) % vocab], numCached: o.promptLen + step, blockTable: blocks(s), sampling: { temperature: o.temperature, topP: o.topP, topK: 0, seed: s } })),
        );
        times.push((await engine.step(plan)).stepTimeMs);
      }
      const ms = median(times);
      const wb = weightBytesPerStep(engine.spec, batch);
      const floorMs = (wb / (bw * 1e9)) * 1000;
      decode.push({ batch, msPerStep: ms, tokensPerSecond: (batch * 1000) / ms, weightBytesPerStep: wb, floorMs, achievedOverFloor: floorMs / ms });
    }
    const pm = median(prefillMs);
    return {
      bench: 'cpu-engine',
      model: dir,
      arch: engine.info.arch,
      threads: engine.info.threads,
      residentWeightBytes: engine.info.residentWeightBytes,
      copyBandwidthGBps: bw,
      prefill: { promptTokens: o.promptLen, ms: pm, tokensPerSecond: (o.promptLen * 1000) / pm },
      sampling: { temperature: o.temperature, topP: o.topP },
      decode,
    };
  } finally {
    engine.close();
    if (tmp) await rm(tmp, { recursive: true, force: true });
  }
}

function num(flag: string, v: string, min: number, max: number): number {
  const n = Number(v);
  if (!Number.isFinite(n) || n < min || n > max) throw new Error(`${flag} must be a number in [${min}, ${max}], got "${v}"`);
  return n;
}

export function registerCpuEngineBench(program: Command): void {
  program
    .command('cpu-engine')
    .description('native engine prefill / decode tokens/s on the CPU backend (JSON report)')
    .option('--model <dir>', 'model directory (default: a fresh tiny qwen3_moe)')
    .option('--threads <n>', 'CPU threads (0 = all cores)', '0')
    .option('--prompt-len <n>', 'prompt tokens for prefill', '128')
    .option('--decode-steps <n>', 'decode steps per batch size', '32')
    .option('--batch <list>', 'decode batch sizes, comma separated', '1,8')
    .option('--repeats <n>', 'prefill repetitions (median)', '3')
    .option('--temperature <t>', 'decode sampling temperature (0 = greedy)', '0.8')
    .option('--top-p <p>', 'decode top-p', '0.95')
    .option('--json-out <file>', 'also write the report here')
    .action(async (opts: Record<string, string | undefined>) => {
      const report = await runCpuEngineBench({
        ...(opts['model'] ? { modelDir: opts['model'] } : {}),
        threads: intFlag('--threads', opts['threads']!, 0),
        promptLen: intFlag('--prompt-len', opts['promptLen']!, 1),
        decodeSteps: intFlag('--decode-steps', opts['decodeSteps']!, 1),
        batchSizes: opts['batch']!.split(',').map((b) => intFlag('--batch', b.trim(), 1)),
        repeats: intFlag('--repeats', opts['repeats']!, 1),
        temperature: num('--temperature', opts['temperature']!, 0, Infinity),
        topP: num('--top-p', opts['topP']!, Number.MIN_VALUE, 1),
      });
      const text = JSON.stringify(report, null, 2);
      if (opts['jsonOut']) await writeFile(opts['jsonOut'], `${text}\n`);
      process.stdout.write(`${text}\n`);
    });
}
