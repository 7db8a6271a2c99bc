/**
 * `afd-bench decode`: the fused CUDA decode step on a full-size model shape with random
 * weights generated on the GPU, at several batch sizes (graph on and off), beside
 * HuggingFace transformers on the same shape in the same invocation. JSON on stdout.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import type { Command } from 'commander';
import { loadAddon } from '@afd/native';
import { parseModelConfig, type ModelLoadSpec } from '@afd/native/checkpoint';
import { findPreset, presetConfigJson } from '../model/presets.js';
import { intFlag } from '../util/intFlag.js';
import { gitCommit } from './cliArgs.js';
import { formatDecodeTable, mergeDecodeReport, parsePeerOutput, type PeerResult } from './decodeReport.js';

interface DecodeCliOptions {
  arch: string;
  preset: string;
  batches: string;
  context: string;
  steps: string;
  warmup: string;
  seed: string;
  device: string;
  peer: 'hf' | 'none';
  python: string;
  peerSteps: string;
  jsonOut?: string;
}

/** tools/bench/hf_decode.py next to the repository (source tree or bundled dist). */
function peerScript(): string {
  const candidates = [
    process.env['AFD_HF_PEER_SCRIPT'],
    resolve('tools/bench/hf_decode.py'),
    process.argv[1] ? join(dirname(process.argv[1]), '..', '..', 'tools', 'bench', 'hf_decode.py') : undefined,
  ].filter((p): p is string => Boolean(p));
  const found = candidates.find((p) => existsSync(p));
  if (!found) throw new Error(`HF peer script not found (tried ${candidates.join(', ')}); set AFD_HF_PEER_SCRIPT or use --peer none`);
  return found;
}

function runPeer(o: DecodeCliOptions, config: Record<string, unknown>): PeerResult {
  const args = [peerScript(), '--config', JSON.stringify(config), '--batches', o.batches, '--context', o.context, '--steps', o.peerSteps];
  process.stderr.write(`afd-bench decode: running the HF peer (${o.python} ${args[0]})\n`);
  const r = spawnSync(o.python, args, {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
    env: { ...process.env, NCCL_NVLS_ENABLE: '0', PYTHONUNBUFFERED: '1' },
    maxBuffer: 64 << 20,
  });
  if (r.error) return { ok: false, error: `could not start ${o.python}: ${r.error.message}` };
  if (r.status !== 0) return { ...parsePeerOutput(r.stdout ?? ''), ok: false, error: `${o.python} exited with ${r.status}` };
  return parsePeerOutput(r.stdout ?? '');
}

export function registerDecodeBench(program: Command): void {
  program
    .command('decode')
    .description('decode step of the fused CUDA path on a full-size random-weight model, with HF transformers as the peer')
    .option('--arch <arch>', 'architecture of the preset', 'qwen3_moe')
    .option('--preset <name>', 'model preset (agent/src/model/presets.ts)', 'qwen3-30b-a3b')
    .option('--batches <list>', 'comma-separated batch sizes', '1,8,64,256')
    .option('--context <n>', 'cached positions before the decoded token', '1024')
    .option('--steps <n>', 'timed steps per batch and mode', '30')
    .option('--warmup <n>', 'warm-up steps per batch and mode', '5')
    .option('--seed <n>', 'seed of the synthetic weights', '1')
    .option('--device <n>', 'CUDA device index', '0')
    .option('--peer <peer>', 'hf (transformers, same shape) or none', 'hf')
    .option('--python <bin>', 'python with torch + transformers for the peer', 'python3')
    .option('--peer-steps <n>', 'timed steps of the peer per batch', '20')
    .option('--json-out <file>', 'also write the JSON report here')
    .action((o: DecodeCliOptions) => {
      const batches = o.batches.split(',').map((b) => intFlag('--batches', b.trim(), 0));
      const context = intFlag('--context', o.context, 0);
      const preset = findPreset(o.arch, o.preset);
      const configJson = presetConfigJson(preset);
      const config = parseModelConfig(`${o.arch}/${o.preset}`, configJson);
      const spec: ModelLoadSpec = { config, role: 'colocated', computeGateOnAttention: false, files: [], tensors: [] };
      process.stderr.write(`afd-bench decode: ${o.arch}/${o.preset}, batches ${batches.join(',')}, context ${context}\n`);
      const ours = loadAddon().cudaDecodeBench(spec, {
        batches,
        context,
        timedSteps: intFlag('--steps', o.steps, 0),
        warmupSteps: intFlag('--warmup', o.warmup, 0),
        seed: intFlag('--seed', o.seed, 0),
        device: intFlag('--device', o.device, 0),
      });
      const peer = o.peer === 'hf' ? runPeer(o, configJson) : null;
      const report = mergeDecodeReport(ours, peer, {
        model: `${o.arch}/${o.preset}`,
        context,
        commit: gitCommit(),
        command: `afd-bench decode ${process.argv.slice(3).join(' ')}`.trim(),
      });
      process.stderr.write(`${formatDecodeTable(report)}\n`);
      const json = JSON.stringify(report, null, 2);
      if (o.jsonOut) writeFileSync(o.jsonOut, `${json}\n`);
      process.stdout.write(`${json}\n`);
    });
}
