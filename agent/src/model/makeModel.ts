/**
 * make-model: write a deterministic random-weight checkpoint in HuggingFace layout
 * (config.json, generation_config.json, model.safetensors or shards + index, the real
 * Qwen3 tokenizer files, and afd-model.json describing how it was made). Everything is
 * written into a temporary sibling folder and renamed into place, so a crash never
 * leaves a half-written model and concurrent makers cannot corrupt each other.
 */
import { randomBytes } from 'node:crypto';
import { copyFile, mkdir, readdir, rename, rm, writeFile } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import {
  buildLoadSpec,
  engineRefusal,
  familyRowOf,
  indexFileName,
  modelTensors,
  normalBf16,
  parseModelConfig,
  singleFileName,
  storedTensorPlans,
  tensorByteLength,
  writeSafetensors,
  type ModelConfigSpec,
  type ModelRole,
  type NormalInit,
  type TensorSlot,
  type TensorPlan,
} from '@afd/native/checkpoint';
import { findPreset, presetConfigJson, type ModelPreset } from './presets.js';
import { findQwen3TokenizerDir, tokenizerFileNames } from './tokenizerFiles.js';

/** Version of the generator; bump when the bytes it writes for a seed change. */
/** make-model writes into `<out>.tmp-<pid>-<random>` and renames it into place when complete. */
const stagingMark = '.tmp-';

/** Whether a folder name is make-model's half-written staging copy of a model (never a model to list). */
export function isStagingDirName(name: string): boolean {
  return /\.tmp-\d+-[0-9a-f]{12}$/.test(name);
}

export const makeModelVersion = 1;
/** Default largest shard (weights above this are split into model-0000i-of-0000n files). */
export const defaultMaxShardBytes = 2 * 1024 ** 3;
/** Marker file describing how a directory was made. */
export const markerFileName = 'afd-model.json';

export interface MakeModelOptions {
  arch: string;
  preset: string;
  outDir: string;
  /** PRNG seed (default 0): the same seed gives byte-identical files. */
  seed?: number;
  /** Replace outDir when it already holds a model (never a folder that does not look like one). */
  force?: boolean;
  /** Write config, generation config and tokenizer only (required for full-size presets). */
  configOnly?: boolean;
  maxShardBytes?: number;
  /**
   * config.json fields to override on top of the preset (e.g. a smaller vocab_size in tests);
   * for a preset that keeps its language model in text_config (Qwen3.5-MoE) they go there,
   * but for architectures, tie_word_embeddings and vision_config.
   */
  overrides?: Record<string, unknown>;
  /** Called after each tensor is written. */
  onProgress?: (bytesDone: number, bytesTotal: number) => void;
}

export interface MakeModelResult {
  dir: string;
  preset: ModelPreset;
  /** Files written, relative to dir. */
  files: string[];
  /** Bytes of weights written (0 with configOnly). */
  weightBytes: number;
  /** Resident weight bytes per role (router on the FFN side); null with configOnly. */
  residentBytes: Record<ModelRole, number> | null;
  /** Why no rank can serve this model yet (layer kinds the engine lacks), or null. */
  engineRefusal: string | null;
}

/** The outDir exists and --force was not given (or another maker won a race). */
export class OutDirExistsError extends Error {
  override readonly name = 'OutDirExistsError';
}

/** afd-model.json. */
export interface ModelMarker {
  generator: 'afd-agent make-model';
  version: number;
  arch: string;
  preset: string;
  seed: number;
  configOnly: boolean;
}

/**
 * Init of one tensor: norms around 1 (so a missing norm weight shows), or around 0 where
 * the model's RMSNorm scales by (1 + weight) (Qwen3-Next, Qwen3.5; their gdn gated norm
 * keeps a plain weight); Gated DeltaNet dt_bias around 1 and A_log around 0 (transformers
 * inits dt_bias to 1); everything else N(0, 0.02).
 */
export function initFor(t: { name: string; slot: TensorSlot }, config: Pick<ModelConfigSpec, 'normUnitOffset'>): NormalInit {
  if (t.slot === 'attn.gated_norm' || t.slot === 'attn.dt_bias') return { mean: 1, std: 0.05 };
  if (t.slot === 'attn.a_log') return { mean: 0, std: 0.5 };
  if (t.name.endsWith('norm.weight')) return { mean: config.normUnitOffset ? 0 : 1, std: 0.05 };
  return { mean: 0, std: 0.02 };
}

function shardName(i: number, n: number): string {
  return `model-${String(i + 1).padStart(5, '0')}-of-${String(n).padStart(5, '0')}.safetensors`;
}

/** Greedy split in checkpoint order; a tensor larger than the limit gets a shard of its own. */
export function planShards<T extends TensorPlan>(tensors: readonly T[], maxShardBytes: number): T[][] {
  const shards: T[][] = [];
  let current: T[] = [];
  let bytes = 0;
  for (const t of tensors) {
    const size = tensorByteLength(t);
    if (current.length > 0 && bytes + size > maxShardBytes) {
      shards.push(current);
      current = [];
      bytes = 0;
    }
    current.push(t);
    bytes += size;
  }
  if (current.length > 0) shards.push(current);
  return shards;
}

function json(value: unknown): string {
  return `${JSON.stringify(value, null, 2)}\n`;
}

/** Top-level keys of a text_config preset that overrides set at the top (the rest go into text_config). */
const topLevelKeys = new Set(['architectures', 'tie_word_embeddings', 'vision_config']);

/** The preset's config with the overrides applied (inside text_config where the preset has one). */
function withOverrides(config: Record<string, unknown>, overrides: Record<string, unknown>): Record<string, unknown> {
  const text = config['text_config'];
  if (!text || typeof text !== 'object') return { ...config, ...overrides };
  const top = Object.fromEntries(Object.entries(overrides).filter(([k]) => topLevelKeys.has(k)));
  const inner = Object.fromEntries(Object.entries(overrides).filter(([k]) => !topLevelKeys.has(k)));
  return { ...config, ...top, text_config: { ...(text as Record<string, unknown>), ...inner } };
}

function generationConfig(config: Record<string, unknown>): Record<string, unknown> {
  // A vision-language config keeps the token ids of its language model in text_config.
  const text = config['text_config'];
  const ids = text && typeof text === 'object' ? { ...config, ...(text as Record<string, unknown>) } : config;
  const eos = ids['eos_token_id'];
  const eosList = Array.isArray(eos) ? eos : eos === undefined ? [] : [eos];
  const bos = ids['bos_token_id'];
  return {
    bos_token_id: bos,
    // Qwen3 ends turns with <|im_end|> (151645) and documents with <|endoftext|> (151643).
    eos_token_id: bos === 151643 ? [...new Set([...eosList, 151643])] : eosList,
    pad_token_id: bos === 151643 ? 151643 : undefined,
    do_sample: true,
    temperature: 0.6,
    top_k: 20,
    top_p: 0.95,
  };
}

async function looksLikeModelDir(dir: string): Promise<boolean> {
  const entries = await readdir(dir);
  return entries.length === 0 || entries.includes('config.json') || entries.includes(markerFileName);
}

async function exists(path: string): Promise<boolean> {
  return readdir(path).then(
    () => true,
    (err: NodeJS.ErrnoException) => {
      if (err.code === 'ENOENT') return false;
      if (err.code === 'ENOTDIR') throw new Error(`${path} exists and is not a directory`);
      throw err;
    },
  );
}

/** A tensor to write and the slot it fills (its init depends on the slot). */
type SlottedPlan = TensorPlan & { slot: TensorSlot };

async function writeWeights(dir: string, tensors: SlottedPlan[], spec: ModelConfigSpec, seed: number, opts: MakeModelOptions): Promise<{ files: string[]; bytes: number }> {
  const shards = planShards(tensors, opts.maxShardBytes ?? defaultMaxShardBytes);
  const total = tensors.reduce((s, t) => s + tensorByteLength(t), 0);
  const files: string[] = [];
  const weightMap: Record<string, string> = {};
  let done = 0;
  for (const [i, shard] of shards.entries()) {
    const name = shards.length === 1 ? singleFileName : shardName(i, shards.length);
    await writeSafetensors(
      join(dir, name),
      shard,
      (t, index) => {
        const bytes = normalBf16(seed, t.name, tensorByteLength(t) / 2, initFor(shard[index]!, spec));
        done += bytes.byteLength;
        opts.onProgress?.(done, total);
        return bytes;
      },
      { format: 'pt' },
    );
    for (const t of shard) weightMap[t.name] = name;
    files.push(name);
  }
  if (shards.length > 1) {
    await writeFile(join(dir, indexFileName), json({ metadata: { total_size: total }, weight_map: weightMap }));
    files.push(indexFileName);
  }
  return { files, bytes: total };
}

/** Write a model directory for a preset. */
export async function makeModel(opts: MakeModelOptions): Promise<MakeModelResult> {
  const preset = findPreset(opts.arch, opts.preset);
  const seed = opts.seed ?? 0;
  if (!Number.isSafeInteger(seed) || seed < 0 || seed > 0xffffffff) throw new Error(`seed must be an integer in 0..4294967295, got ${seed}`);
  const config = withOverrides(presetConfigJson(preset), opts.overrides ?? {});
  const spec = parseModelConfig(`preset ${preset.arch}/${preset.name}`, config);
  // In the layout the family's published checkpoints use (Qwen3.5-MoE: fused experts).
  const tensors: SlottedPlan[] = storedTensorPlans(familyRowOf(spec), spec, modelTensors(spec)).map((t) => ({ name: t.name, dtype: 'bf16', shape: t.shape, slot: t.slot }));
  const weightBytes = tensors.reduce((s, t) => s + tensorByteLength(t), 0);
  const configOnly = opts.configOnly ?? false;
  if (preset.weights === 'device' && !configOnly) {
    throw new Error(
      `preset ${preset.arch}/${preset.name} has ${(weightBytes / 1024 ** 3).toFixed(1)} GiB of weights, which the GPU benchmark creates on the device: pass --config-only to write its config`,
    );
  }
  const dir = resolve(opts.outDir);
  if (await exists(dir)) {
    if (!opts.force) throw new OutDirExistsError(`${dir} already exists: pass --force to replace it, or choose another --out`);
    if (!(await looksLikeModelDir(dir))) throw new Error(`${dir} is not empty and holds no config.json: refusing to replace it even with --force`);
  }
  await mkdir(dirname(dir), { recursive: true });
  const tmp = `${dir}${stagingMark}${process.pid}-${randomBytes(6).toString('hex')}`;
  await mkdir(tmp);
  try {
    const files = ['config.json', 'generation_config.json'];
    await writeFile(join(tmp, 'config.json'), json(config));
    await writeFile(join(tmp, 'generation_config.json'), json(generationConfig(config)));
    const tokenizerDir = findQwen3TokenizerDir();
    for (const f of tokenizerFileNames) await copyFile(join(tokenizerDir, f), join(tmp, f));
    files.push(...tokenizerFileNames);
    let written = 0;
    let residentBytes: Record<ModelRole, number> | null = null;
    if (!configOnly) {
      const w = await writeWeights(tmp, tensors, spec, seed, opts);
      files.push(...w.files);
      written = w.bytes;
      // Self-check: what we wrote loads for every role.
      residentBytes = { colocated: 0, attention: 0, ffn: 0 };
      for (const role of Object.keys(residentBytes) as ModelRole[]) residentBytes[role] = (await buildLoadSpec(tmp, role)).residentBytes;
    }
    const marker: ModelMarker = { generator: 'afd-agent make-model', version: makeModelVersion, arch: preset.arch, preset: preset.name, seed, configOnly };
    await writeFile(join(tmp, markerFileName), json(marker));
    files.push(markerFileName);
    await moveIntoPlace(tmp, dir, opts.force ?? false);
    // Resident bytes were measured in tmp; paths inside specs are not returned.
    return { dir, preset, files, weightBytes: written, residentBytes, engineRefusal: engineRefusal(spec) };
  } finally {
    await rm(tmp, { recursive: true, force: true });
  }
}

async function moveIntoPlace(tmp: string, dir: string, force: boolean): Promise<void> {
  let old: string | null = null;
  if (force && (await exists(dir))) {
    old = `${dir}.old-${process.pid}-${randomBytes(6).toString('hex')}`;
    await rename(dir, old);
  }
  try {
    await rename(tmp, dir);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'EEXIST' || code === 'ENOTEMPTY') throw new OutDirExistsError(`${dir} was created by another process while ${basename(tmp)} was being written`);
    throw err;
  } finally {
    if (old) await rm(old, { recursive: true, force: true });
  }
}
