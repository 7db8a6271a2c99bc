/**
 * `afd-bench afd-gpu`: AFD on two GPUs (the AFD modes of the decode benchmark). This
 * process runs the attention role on --devices[0] and starts the FFN role on
 * --devices[1] as a child process of the same program; the two meet over a TCP
 * bootstrap and then talk only through the GPU wires (NCCL and/or CUDA IPC peer
 * memory). Prints one JSON report: ping-pong round trips (host-launched and inside a
 * captured graph), colocated baseline vs 1A1F per batch / graph / DBO with token
 * equality, the FFN side's graph counters, the fault test, and the targets of
 * PERFORMANCE.md evaluated against the measurements.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import type { Command } from 'commander';
import { loadAddon, type AfdGpuBenchOptions } from '@afd/native';
import { parseModelConfig, type ModelLoadSpec } from '@afd/native/checkpoint';
import { findPreset, presetConfigJson } from '../model/presets.js';
import { intFlag } from '../util/intFlag.js';
import { evaluateAfdTargets, type AfdGpuReport } from './afdGpuReport.js';

interface AfdGpuCliOptions {
  arch: string;
  preset: string;
  transports: string;
  batches: string;
  dboMinBatch: string;
  context: string;
  steps: string;
  warmup: string;
  pingBytes: string;
  pingIters: string;
  devices: string;
  host: string;
  port: string;
  deadlineMs: string;
  fault: boolean;
  role: 'driver' | 'ffn';
  jsonOut?: string;
}

function intList(flag: string, v: string): number[] {
  return v.split(',').map((s) => {
    const n = Number(s.trim());
    if (!Number.isInteger(n) || n < 0) throw new Error(`${flag} must be a comma-separated list of non-negative integers, got "${v}"`);
    return n;
  });
}

function specOf(o: AfdGpuCliOptions): ModelLoadSpec {
  const preset = findPreset(o.arch, o.preset);
  const config = parseModelConfig(`${o.arch}/${o.preset}`, presetConfigJson(preset));
  return { config, role: 'colocated', computeGateOnAttention: false, files: [], tensors: [] };
}

function benchOptions(o: AfdGpuCliOptions, role: 'attention' | 'ffn'): AfdGpuBenchOptions {
  const devices = intList('--devices', o.devices);
  if (devices.length !== 2) throw new Error(`--devices takes two device indexes (attention,ffn), got "${o.devices}"`);
  const transports = o.transports.split(',').map((t) => t.trim());
  for (const t of transports) if (t !== 'nccl' && t !== 'peer') throw new Error(`--transports: "${t}" is not nccl or peer`);
  return {
    role,
    host: o.host,
    port: intFlag('--port', o.port, 0, 65535),
    device: role === 'attention' ? devices[0] : devices[1],
    transports,
    pingBytes: intList('--ping-bytes', o.pingBytes),
    pingIters: intFlag('--ping-iters', o.pingIters, 0),
    batches: intList('--batches', o.batches),
    dboMinBatch: intFlag('--dbo-min-batch', o.dboMinBatch, 0),
    context: intFlag('--context', o.context, 0),
    warmupSteps: intFlag('--warmup', o.warmup, 0),
    timedSteps: intFlag('--steps', o.steps, 0),
    stepDeadlineMs: intFlag('--deadline-ms', o.deadlineMs, 0),
    faultTest: o.fault,
    ncclEnv: { NCCL_NVLS_ENABLE: '0' },
  };
}

/** Starts the FFN role: this same program with --role ffn. */
function startFfn(): { child: ChildProcess; output: Promise<{ code: number | null; signal: string | null; stdout: string }> } {
  const script = process.argv[1];
  if (!script) throw new Error('cannot find this program to start the FFN role');
  const args = [...process.argv.slice(2).filter((a) => a !== '--role' && a !== 'driver'), '--role', 'ffn'];
  const child = spawn(process.execPath, [script, ...args], {
    stdio: ['ignore', 'pipe', 'inherit'],
    env: { ...process.env, NCCL_NVLS_ENABLE: '0' },
  });
  let stdout = '';
  child.stdout?.on('data', (d: Buffer) => (stdout += d.toString()));
  const output = new Promise<{ code: number | null; signal: string | null; stdout: string }>((resolve) =>
    child.on('exit', (code, signal) => resolve({ code, signal, stdout })),
  );
  return { child, output };
}

async function drive(o: AfdGpuCliOptions): Promise<void> {
  const spec = specOf(o);
  const { child, output } = startFfn();
  let report: AfdGpuReport;
  try {
    process.stderr.write(`afd-bench afd-gpu: ${o.arch}/${o.preset}, attention on device ${o.devices.split(',')[0]}, FFN (pid ${child.pid}) on the other\n`);
    const options = { ...benchOptions(o, 'attention'), ...(o.jsonOut ? { partialReportPath: `${o.jsonOut}.partial` } : {}) };
    report = JSON.parse(loadAddon().afdGpuBench(spec, options)) as AfdGpuReport;
  } catch (err) {
    child.kill('SIGKILL');
    throw err;
  }
  const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
  const ffn = await output;
  clearTimeout(timer);
  const full = {
    model: `${o.arch}/${o.preset}`,
    command: `afd-bench afd-gpu ${process.argv.slice(3).join(' ')}`.trim(),
    ...report,
    ffnExit: { code: ffn.code, signal: ffn.signal },
    targets: evaluateAfdTargets(report),
  };
  const json = JSON.stringify(full, null, 2);
  if (o.jsonOut) writeFileSync(o.jsonOut, `${json}\n`);
  process.stdout.write(`${json}\n`);
}

export function registerAfdGpuBench(program: Command): void {
  program
    .command('afd-gpu')
    .description('AFD on two GPUs: NCCL / peer-memory round trips, 1A1F vs colocated decode (graphs, DBO), fault test')
    .option('--arch <arch>', 'architecture of the preset', 'qwen3_moe')
    .option('--preset <name>', 'model preset (agent/src/model/presets.ts)', 'qwen3-30b-a3b')
    .option('--transports <list>', 'GPU wires: nccl,peer', 'nccl,peer')
    .option('--batches <list>', 'comma-separated batch sizes', '1,64,256')
    .option('--dbo-min-batch <n>', 'batches at or above this also run with two DBO stages', '64')
    .option('--context <n>', 'cached positions before the decoded token', '1024')
    .option('--steps <n>', 'timed steps per batch and mode', '20')
    .option('--warmup <n>', 'warm-up steps per batch and mode', '3')
    .option('--ping-bytes <list>', 'ping-pong sizes, bytes', '4096,32768,262144,1048576')
    .option('--ping-iters <n>', 'host-launched ping-pongs per size', '200')
    .option('--devices <a,f>', 'CUDA devices of the attention and FFN roles', '0,1')
    .option('--host <host>', 'FFN bootstrap address', '127.0.0.1')
    .option('--port <n>', 'FFN bootstrap port', '29650')
    .option('--deadline-ms <n>', 'step deadline (a silent peer fails the step)', '5000')
    .option('--no-fault', 'skip the fault test (killing the FFN process)')
    .option('--role <role>', 'internal: driver (default) or ffn', 'driver')
    .option('--json-out <file>', 'also write the JSON report here')
    .action(async (o: AfdGpuCliOptions) => {
      if (o.role === 'ffn') {
        const out = loadAddon().afdGpuBench(specOf(o), benchOptions(o, 'ffn'));
        process.stdout.write(`${out}\n`);
        return;
      }
      await drive(o);
    });
}
