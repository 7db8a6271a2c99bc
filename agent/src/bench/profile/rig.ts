/**
 * The engines of `afd-bench profile` and `afd-bench afd-step`: role engines of one model
 * preset with dummy weights (no checkpoint on disk), prefilled sequences, and timed decode
 * steps. The same Engine, AttentionLink and FfnServer the role processes run.
 */
import { Engine, type EngineLoadOptions } from '@afd/native';
import { dummyLoadSpec, parseModelConfig } from '@afd/native/checkpoint';
import { buildStepPlan, type PlanSeq, type StepResult } from '@afd/shared';
import { findPreset, presetConfigJson } from '../../model/presets.js';

export const KV_BLOCK = 16;

/**
 * The PlanSeq field of bench sequence `s` of an engine: its recurrent-state slot (its index)
 * when the model keeps state per sequence (linear-attention layers, info.numStateSlots > 0),
 * else nothing. Benchmarks build plans without the scheduler, one slot per sequence index.
 */
export function stateSlotOf(info: { numStateSlots?: number }, s: number): { stateSlot?: number } {
  const slots = info.numStateSlots ?? 0; // an engine built before the field reads as none
  if (slots === 0) return {};
  if (s >= slots) throw new Error(`afd-bench: sequence ${s} needs a recurrent-state slot but the engine has ${slots}; load it with numStateSlots above the largest batch`);
  return { stateSlot: s };
}

/** What every engine of a run is loaded with. */
export interface RigOptions {
  arch: string;
  preset: string;
  backend: 'cpu' | 'cuda';
  /** CPU worker threads per engine (0 = all cores). */
  threads: number;
  device: number;
  seed: number;
  /** Sequences and tokens per sequence the KV cache must hold. */
  maxBatch: number;
  maxTokensPerSeq: number;
}

export type Role = 'colocated' | 'attention' | 'ffn';

/** The model config of the preset (arch/preset). */
export function rigModelConfig(o: Pick<RigOptions, 'arch' | 'preset'>): ReturnType<typeof parseModelConfig> {
  return parseModelConfig(`${o.arch}/${o.preset}`, presetConfigJson(findPreset(o.arch, o.preset)));
}

export function blocksPerSeq(o: RigOptions): number {
  return Math.ceil((o.maxTokensPerSeq + 1) / KV_BLOCK);
}

/** Loads one role engine with dummy weights. */
export async function loadRoleEngine(o: RigOptions, role: Role): Promise<Engine> {
  const { spec } = dummyLoadSpec(rigModelConfig(o), role, { seed: o.seed });
  const opts: EngineLoadOptions = { backend: o.backend, threads: o.threads, kvBlockSize: KV_BLOCK };
  if (o.backend === 'cuda') opts.deviceIndex = o.device;
  if (role !== 'ffn') {
    opts.numKvBlocks = o.maxBatch * blocksPerSeq(o);
    opts.numStateSlots = o.maxBatch; // one per sequence (ignored for a model without linear-attention layers)
  }
  return Engine.load(spec, opts);
}

/** Deterministic prompt tokens (an LCG over the vocabulary). */
export function promptTokens(seq: number, length: number, vocab: number): number[] {
  let x = (seq * 2654435761 + 12345) >>> 0;
  return Array.from({ length }, () => {
    x = (Math.imul(x, 1664525) + 1013904223) >>> 0;
    return x % vocab;
  });
}

/** Sequences of one attention rank: block tables and the last token of each. */
export interface Prefilled {
  blocks: number[][];
  lastTokens: number[];
  context: number;
  /** The engine keeps recurrent state per sequence: sequence s's plans carry state slot s. */
  stateSlots: boolean;
}

/** Prefills `batch` sequences of `context` tokens (a few sequences per step). */
export async function prefill(engine: Engine, o: RigOptions, batch: number, context: number): Promise<Prefilled> {
  const per = blocksPerSeq(o);
  const blocks = Array.from({ length: batch }, (_, s) => Array.from({ length: per }, (_, j) => s * per + j));
  const vocab = engine.info.vocabSize;
  const lastTokens: number[] = [];
  const perStep = Math.max(1, Math.floor(2048 / Math.max(1, context)));
  for (let s0 = 0; s0 < batch; s0 += perStep) {
    const seqs: PlanSeq[] = [];
    for (let s = s0; s < Math.min(batch, s0 + perStep); s++) {
      const ids = promptTokens(s, Math.max(1, context), vocab);
      lastTokens[s] = ids[ids.length - 1]!;
      seqs.push({ tokenIds: ids, numCached: 0, blockTable: blocks[s]!.slice(0, Math.ceil(ids.length / KV_BLOCK)), sample: false, ...stateSlotOf(engine.info, s) });
    }
    await engine.step(buildStepPlan(seqs));
  }
  return { blocks, lastTokens, context: Math.max(1, context), stateSlots: engine.info.numStateSlots > 0 };
}

/**
 * The plan of decode step `i` for the first `batch` prefilled sequences (positions from
 * `context`; the slots after it are rewritten each time; a recurrent state just goes on,
 * which costs the same). dbo: two stages, half each.
 */
export function decodePlan(p: Prefilled, batch: number, i: number, dbo: boolean, tokens: readonly number[]): ReturnType<typeof buildStepPlan> {
  const pos = p.context + i;
  const seqs = Array.from({ length: batch }, (_, s): PlanSeq => ({ tokenIds: [tokens[s] ?? p.lastTokens[s]!], numCached: pos, blockTable: p.blocks[s]!.slice(0, Math.ceil((pos + 1) / KV_BLOCK)), ...(p.stateSlots ? { stateSlot: s } : {}) }));
  return buildStepPlan(seqs, dbo && batch >= 2 ? { stageSplit: Math.floor(batch / 2) } : {});
}

export const median = (v: readonly number[]): number => [...v].sort((a, b) => a - b)[Math.floor(v.length / 2)]!;

/** Runs warmup + steps decode steps; calls `sample` after each timed one with the step's result and wall ms. */
export async function decodeSteps(
  engine: Engine,
  p: Prefilled,
  batch: number,
  n: { warmup: number; steps: number },
  sample: (r: StepResult, wallMs: number) => void,
  dbo = false,
): Promise<void> {
  let tokens: number[] = p.lastTokens.slice(0, batch);
  for (let i = 0; i < n.warmup + n.steps; i++) {
    const t = performance.now();
    const r = await engine.step(decodePlan(p, batch, i, dbo, tokens));
    const wall = performance.now() - t;
    if (i >= n.warmup) sample(r, wall);
    tokens = Array.from(r.tokenIds);
  }
}

/**
 * Runs `work` with the event loop held open: a link's rendezvous and an FFN loop's end
 * settle from native threads, which keep no handle alive, so a command line with nothing
 * else pending would exit (status 0) before they do. Role processes have their HTTP server.
 */
export async function holdingEventLoop<T>(work: () => Promise<T>): Promise<T> {
  const timer = setInterval(() => {}, 1 << 30);
  try {
    return await work();
  } finally {
    clearInterval(timer);
  }
}
