/**
 * `afd-bench decode`: Engine::step of the product, through the same addon and Engine the
 * role processes use, on a full-size model preset with dummy weights generated on the GPU
 * (--load-format dummy's generator: no checkpoint on disk), at several batch sizes with
 * CUDA graphs on and off, beside HuggingFace transformers on the same shape in the same
 * invocation. Every sequence is really prefilled to `context` tokens first; each batch then
 * decodes from there. With --top-logprobs / --penalties / --token-mask (decodeExtras.ts)
 * each batch also decodes the same steps again with those on every sequence, and the
 * report gives the ratio to the plain step. JSON on stdout (and --json-out), a table on stderr.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import type { Command } from 'commander';
import { Engine } from '@afd/native';
import { MAX_TOP_LOGPROBS, buildStepPlan, type PlanSeq } from '@afd/shared';
import { dummyLoadSpec, parseModelConfig } from '@afd/native/checkpoint';
import { findPreset, presetConfigJson } from '../model/presets.js';
import { intFlag } from '../util/intFlag.js';
import { gitCommit } from './cliArgs.js';
import { formatDecodeTable, mergeDecodeReport, parsePeerOutput, type DecodeFloor, type EngineDecodeRow, type PeerResult } from './decodeReport.js';
import { describeExtras, extrasOf, halfVocabMask, withPenaltySlot, type DecodeExtras } from './decodeExtras.js';
import { H200_BANDWIDTH, expectedActiveExperts, kvBytesPerStep, stateBytesPerStep, weightBytesPerStep } from './stepFloor.js';
import { agentEnv } from '../util/env.js';
import { promptTokens, stateSlotOf } from './profile/rig.js';
import { formatPrefixHit, prefixHitRefusal, timePrefixHit, type PrefixHitRow } from './decodePrefixHit.js';

interface DecodeCliOptions {
  arch: string;
  preset: string;
  batches: string;
  context: string;
  steps: string;
  warmup: string;
  seed: string;
  device: string;
  modes: string;
  prefillTokens: string;
  peer: 'hf' | 'none';
  python: string;
  peerSteps: string;
  jsonOut?: string;
  topLogprobs?: string;
  penalties?: boolean;
  tokenMask?: boolean;
  prefixHit?: string;
  prefixHitBatches?: string;
  profileRange?: string;
}

const KV_BLOCK = 16;

/** tools/bench/hf_decode.py next to the repository (source tree or bundled dist). */
function peerScript(): string {
  const candidates = [
    agentEnv().hfPeerScript,
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

const quantile = (v: number[], q: number): number => [...v].sort((a, b) => a - b)[Math.min(v.length - 1, Math.floor(q * v.length))]!;

interface Workload {
  batches: number[];
  context: number;
  warmup: number;
  steps: number;
  prefillTokens: number;
  extras: DecodeExtras;
  /** --prefix-hit: new tokens per sequence over the cached context (0: not timed), at these batches. */
  prefixHit: number;
  prefixHitBatches: number[];
  /** --profile-range: which step goes into the CUDA profiler's capture range. */
  profileRange: 'decode' | 'hit' | null;
}

function profileRangeFlag(v: string | undefined): Workload['profileRange'] {
  if (v === undefined) return null;
  if (v !== 'decode' && v !== 'hit') throw new Error(`--profile-range takes decode or hit, got "${v}"`);
  return v;
}

/** Loads the engine (graphs on or off), prefills every sequence, times each batch. */
async function measure(
  spec: ReturnType<typeof dummyLoadSpec>['spec'],
  device: number,
  graph: boolean,
  w: Workload,
  withPrefixHit: boolean,
): Promise<{ rows: EngineDecodeRow[]; prefixHit: PrefixHitRow[]; loadSeconds: number }> {
  const hitBatches = withPrefixHit && w.prefixHit > 0 ? w.prefixHitBatches : [];
  const maxBatch = Math.max(...w.batches, ...hitBatches);
  const blocksPerSeq = Math.ceil((w.context + Math.max(w.warmup + w.steps + 1, w.prefixHit)) / KV_BLOCK);
  const t0 = performance.now();
  const engine = await Engine.load(spec, {
    backend: 'cuda',
    deviceIndex: device,
    kvBlockSize: KV_BLOCK,
    numKvBlocks: maxBatch * blocksPerSeq,
    graphPolicy: graph ? 'decode-only' : 'off',
    ...(graph ? { graphBatchBuckets: [...new Set(w.batches)].sort((a, b) => a - b) } : {}),
    numStateSlots: maxBatch, // sequence s holds slot s (a model with linear-attention layers; ignored otherwise)
  });
  const loadSeconds = (performance.now() - t0) / 1000;
  try {
    const vocab = spec.config.vocabSize;
    const blocks = Array.from({ length: maxBatch }, (_, s) => Array.from({ length: blocksPerSeq }, (_, j) => s * blocksPerSeq + j));
    const last: number[] = [];
    const perStep = Math.max(1, Math.floor(w.prefillTokens / w.context));
    for (let s0 = 0; s0 < maxBatch; s0 += perStep) {
      const seqs: PlanSeq[] = [];
      for (let s = s0; s < Math.min(maxBatch, s0 + perStep); s++) {
        const ids = promptTokens(s, w.context, vocab);
        last[s] = ids[ids.length - 1]!;
        seqs.push({ tokenIds: ids, numCached: 0, blockTable: blocks[s]!.slice(0, Math.ceil(w.context / KV_BLOCK)), sample: false, ...stateSlotOf(engine.info, s) });
      }
      await engine.step(buildStepPlan(seqs));
    }
    process.stderr.write(`afd-bench decode: graphs ${graph ? 'on' : 'off'}: loaded in ${loadSeconds.toFixed(1)} s, prefilled ${maxBatch} x ${w.context} tokens\n`);
    const extras = describeExtras(w.extras) !== null ? Array.from({ length: maxBatch }, (_, s) => extrasOf(w.extras, s, vocab)) : null;
    // Decodes `batch` sequences from position `context` (the slots after it are rewritten
    // each time), optionally with the extras; the median and spread of the timed steps.
    const timeBatch = async (batch: number, withExtras: boolean): Promise<{ wall: number[]; inner: number[] }> => {
      let tokens = last.slice(0, batch);
      // --token-mask: the step waits for its mask before sampling; it is given right after the submit.
      const mask = withExtras && w.extras.tokenMask ? halfVocabMask(batch, vocab) : null;
      const wall: number[] = [];
      const inner: number[] = [];
      for (let i = 0; i < w.warmup + w.steps; i++) {
        const pos = w.context + i;
        const plan = buildStepPlan(
          tokens.map((t, s): PlanSeq => ({ tokenIds: [t], numCached: pos, blockTable: blocks[s]!.slice(0, Math.ceil((pos + 1) / KV_BLOCK)), ...stateSlotOf(engine.info, s), ...(withExtras ? withPenaltySlot(extras![s]!, s, i === 0) : {}) })),
        );
        // --profile-range decode: the last timed step of each batch, in the profiler's range.
        const profiled = w.profileRange === 'decode' && i === w.warmup + w.steps - 1;
        if (profiled) engine.profilerRange(true);
        const t = performance.now();
        const pending = engine.step(plan);
        if (mask) engine.provideTokenMask(mask);
        const r = await pending;
        const ms = performance.now() - t;
        if (profiled) engine.profilerRange(false);
        if (i >= w.warmup) {
          wall.push(ms);
          inner.push(r.stepTimeMs);
        }
        tokens = [...r.tokenIds];
      }
      return { wall, inner };
    };
    const rows: EngineDecodeRow[] = [];
    for (const batch of w.batches) {
      const before = engine.stats();
      const { wall, inner } = await timeBatch(batch, false);
      const after = engine.stats();
      const ms = quantile(wall, 0.5);
      const row: EngineDecodeRow = {
        batch,
        graph,
        msPerStep: ms,
        msPerStepP10: quantile(wall, 0.1),
        msPerStepP90: quantile(wall, 0.9),
        engineMsPerStep: quantile(inner, 0.5),
        tokensPerSecond: (batch * 1000) / ms,
        kernelsPerStep: graph && after.graphCaptures > before.graphCaptures ? after.graphNodes : null,
        graphHits: after.graphHits - before.graphHits,
        graphMisses: after.graphMisses - before.graphMisses,
      };
      let note = '';
      if (extras) {
        const x = await timeBatch(batch, true);
        const xMs = quantile(x.wall, 0.5);
        row.extras = { msPerStep: xMs, engineMsPerStep: quantile(x.inner, 0.5), ratio: xMs / ms };
        note = `; with ${describeExtras(w.extras)}: ${xMs.toFixed(2)} ms/step (${row.extras.ratio.toFixed(2)}x)`;
      }
      rows.push(row);
      process.stderr.write(`afd-bench decode: batch ${batch} graphs ${graph ? 'on' : 'off'}: ${ms.toFixed(2)} ms/step${note}\n`);
    }
    const prefixHit: PrefixHitRow[] = [];
    for (const batch of hitBatches) {
      const rig = { engine, vocab, blockSize: KV_BLOCK, blocks, context: w.context, suffix: w.prefixHit, prefillTokens: w.prefillTokens, repeats: Math.min(w.steps, 5), profileHit: w.profileRange === 'hit' };
      const r = await timePrefixHit(rig, batch);
      prefixHit.push(r);
      process.stderr.write(`${formatPrefixHit(r)}\n`);
    }
    return { rows, prefixHit, loadSeconds };
  } finally {
    engine.close();
  }
}

export function registerDecodeBench(program: Command): void {
  program
    .command('decode')
    .description("Engine::step (the role processes' engine) on a full-size dummy-weight model, graphs on and off, with HF transformers as the peer")
    .option('--arch <arch>', 'architecture of the preset', 'qwen3_moe')
    .option('--preset <name>', 'model preset (agent/src/model/presets.ts)', 'qwen3-30b-a3b')
    .option('--batches <list>', 'comma-separated batch sizes', '1,8,64,256')
    .option('--context <n>', 'prefilled tokens per sequence before the decoded ones', '1024')
    .option('--steps <n>', 'timed steps per batch and mode', '30')
    .option('--warmup <n>', 'warm-up steps per batch and mode', '5')
    .option('--seed <n>', 'seed of the dummy weights', '1')
    .option('--device <n>', 'CUDA device index', '0')
    .option('--modes <list>', 'graph and/or eager', 'graph,eager')
    .option('--prefill-tokens <n>', 'tokens per prefill step', '8192')
    .option('--peer <peer>', 'hf (transformers, same shape) or none', 'hf')
    .option('--python <bin>', 'python with torch + transformers for the peer', 'python3')
    .option('--peer-steps <n>', 'timed steps of the peer per batch', '20')
    .option('--json-out <file>', 'also write the JSON report here')
    .option('--top-logprobs <k>', 'also time each batch with every sequence asking k top log-probabilities (0..20), beside the plain step')
    .option('--penalties', 'also time each batch with presence 0.5, frequency 0.5, repetition 1.1 (256 seen tokens, in an engine penalty slot seeded on the first step, as the scheduler does) and a 16-entry logit bias on every sequence')
    .option('--token-mask', 'also time each batch with every sequence under an allowed-token mask of half the vocabulary, given deferred (provideTokenMask) each step')
    .option('--prefix-hit <q>', 'also time a prefix-cache hit: q new tokens per sequence over the cached context, against the cold prefill of the same prompts (decodePrefixHit.ts)')
    .option('--prefix-hit-batches <list>', 'batch sizes of --prefix-hit (default: --batches)')
    .option('--profile-range <step>', "hold one step per batch in the CUDA profiler's capture range (ncu --profile-from-start off): decode (the last timed decode step) or hit (the last timed --prefix-hit step)")
    .action(async (o: DecodeCliOptions) => {
      const w: Workload = {
        batches: o.batches.split(',').map((b) => intFlag('--batches', b.trim(), 1)),
        context: intFlag('--context', o.context, 1),
        warmup: intFlag('--warmup', o.warmup, 0),
        steps: intFlag('--steps', o.steps, 1),
        prefillTokens: intFlag('--prefill-tokens', o.prefillTokens, 1),
        prefixHit: o.prefixHit !== undefined ? intFlag('--prefix-hit', o.prefixHit, 1) : 0,
        prefixHitBatches: (o.prefixHitBatches ?? o.batches).split(',').map((b) => intFlag('--prefix-hit-batches', b.trim(), 1)),
        profileRange: profileRangeFlag(o.profileRange),
        extras: { topLogprobs: o.topLogprobs !== undefined ? intFlag('--top-logprobs', o.topLogprobs, 0, MAX_TOP_LOGPROBS) : null, penalties: o.penalties === true, tokenMask: o.tokenMask === true },
      };
      const modes = o.modes.split(',').map((m) => m.trim());
      for (const m of modes) if (m !== 'graph' && m !== 'eager') throw new Error(`--modes takes graph and/or eager, got "${m}"`);
      const preset = findPreset(o.arch, o.preset);
      const configJson = presetConfigJson(preset);
      const config = parseModelConfig(`${o.arch}/${o.preset}`, configJson);
      const { spec, residentBytes } = dummyLoadSpec(config, 'colocated', { seed: intFlag('--seed', o.seed, 0) });
      if (w.prefixHit > 0 && spec.config.gdn !== null) throw new Error(prefixHitRefusal(`${o.arch}/${o.preset}`));
      if (w.profileRange === 'hit' && w.prefixHit === 0) throw new Error('--profile-range hit profiles the --prefix-hit step: give --prefix-hit too');
      process.stderr.write(`afd-bench decode: Engine::step, ${o.arch}/${o.preset} (${(residentBytes / 1e9).toFixed(1)} GB dummy weights), batches ${w.batches.join(',')}, context ${w.context}\n`);
      const rows: EngineDecodeRow[] = [];
      const prefixHit: PrefixHitRow[] = [];
      let loadSeconds = 0;
      for (const [i, m] of modes.entries()) {
        // Prefill steps run eagerly in both modes: the hit is timed once, in the first mode.
        const r = await measure(spec, intFlag('--device', o.device, 0), m === 'graph', w, i === 0);
        rows.push(...r.rows);
        prefixHit.push(...r.prefixHit);
        loadSeconds = Math.max(loadSeconds, r.loadSeconds);
      }
      const midContext = w.context + w.warmup + w.steps / 2;
      const floors: DecodeFloor[] = w.batches.map((batch) => ({
        batch,
        weightBytes: weightBytesPerStep(spec, batch),
        // The gdn layers' recurrent state counts with the cache: read and written each step.
        kvBytes: kvBytesPerStep(spec, batch, midContext, 2) + stateBytesPerStep(spec, batch),
        activeExpertsPerLayer: expectedActiveExperts(config.numExperts, config.numExpertsPerTok, batch),
      }));
      const peer = o.peer === 'hf' ? runPeer(o, configJson) : null;
      const report = mergeDecodeReport(rows, floors, peer, {
        model: `${o.arch}/${o.preset}`,
        context: w.context,
        weightBytes: residentBytes,
        loadSeconds,
        referenceBandwidth: H200_BANDWIDTH,
        extras: describeExtras(w.extras),
        commit: gitCommit(),
        command: `afd-bench decode ${process.argv.slice(3).join(' ')}`.trim(),
      });
      process.stderr.write(`${formatDecodeTable(report)}\n`);
      const json = JSON.stringify(prefixHit.length > 0 ? { ...report, prefixHit } : report, null, 2);
      if (o.jsonOut) writeFileSync(o.jsonOut, `${json}\n`);
      process.stdout.write(`${json}\n`);
    });
}
