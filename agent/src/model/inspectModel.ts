/**
 * `model.inspect`: reads a model directory the way a rank would (config.json, the
 * safetensors headers checked against every tensor the model needs, the tokenizer files)
 * without loading any weight, and says whether it can be served, by which roles, or why
 * not. A directory with a valid config but no safetensors files is `config-only`: the
 * engine can serve it with random weights under load format dummy.
 */
import { readdir, readFile, stat } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import {
  buildLoadSpec,
  CheckpointError,
  engineRefusal,
  indexFileName,
  modelTensors,
  numElements,
  readModelConfig,
  roleOwns,
  singleFileName,
  type ModelConfigSpec,
  type ModelRole,
} from '@afd/native/checkpoint';
import type { ModelConfigSummary, ModelInspectResult, ProcessRole } from '@afd/shared';
import { tokenizerFileNames } from './tokenizerFiles.js';

/** What a config-only directory needs, as the console shows it. */
export const CONFIG_ONLY_REASON = 'config only: needs load format dummy (no *.safetensors weights in the directory)';

const ROLES: readonly ModelRole[] = ['colocated', 'attention', 'ffn'];

/** Bytes per element by tensor name: the checkpoint's dtypes, bf16 where there are no weights. */
type ElementBytes = (name: string) => number;

export function summarizeConfig(config: ModelConfigSpec, elementBytes: ElementBytes = () => 2): ModelConfigSummary {
  const tensors = modelTensors(config);
  let parameters = 0;
  const roleBytes = { colocated: 0, attention: 0, ffn: 0 };
  for (const t of tensors) {
    const n = numElements(t.shape);
    parameters += n;
    for (const role of ROLES) if (roleOwns(role, t.owner, false)) roleBytes[role] += n * elementBytes(t.name);
  }
  return {
    architecture: config.hfArchitecture,
    family: config.arch,
    numLayers: config.numLayers,
    hiddenSize: config.hiddenSize,
    numExperts: config.numExperts,
    numExpertsPerTok: config.numExpertsPerTok,
    vocabSize: config.vocabSize,
    maxPositionEmbeddings: config.maxPositionEmbeddings,
    parameters,
    roleBytes,
    linearAttentionLayers: config.layers.filter((l) => l.attention === 'gdn').length,
  };
}

async function tokenizerOf(dir: string): Promise<ModelInspectResult['tokenizer']> {
  const present = (await Promise.all(tokenizerFileNames.map((f) => isFile(join(dir, f))))).every(Boolean);
  if (!present) return { present: false, chatTemplate: false };
  try {
    const config = JSON.parse(await readFile(join(dir, 'tokenizer_config.json'), 'utf8')) as { chat_template?: unknown };
    return { present: true, chatTemplate: typeof config.chat_template === 'string' || Array.isArray(config.chat_template) };
  } catch {
    return { present: true, chatTemplate: false };
  }
}

async function isFile(path: string): Promise<boolean> {
  try {
    return (await stat(path)).isFile();
  } catch {
    return false;
  }
}

/** Roles a directory with this tokenizer can run: attention and colocated ranks serve text, FFN ranks do not. */
function rolesWith(tokenizer: ModelInspectResult['tokenizer']): ProcessRole[] {
  return tokenizer.present ? ['colocated', 'attention', 'ffn'] : ['ffn'];
}

const noWeights = { present: false, files: 0, bytes: 0 };

/** What inspect says of a vision-language checkpoint served as text only. */
export const VISION_IGNORED_NOTE = 'text only: the vision tower (vision_config, weights model.visual.*) is not loaded and is ignored';

/**
 * Why no rank can run a model the checkpoint layer understands (a family whose layer kinds
 * the engine lacks, engineKinds.ts), or null; with the vision note where it applies.
 */
function engineNotes(config: ModelConfigSpec): { refusal: string | null; note: string | null } {
  const refusal = engineRefusal(config);
  const vision = config.visionTowerIgnored ? VISION_IGNORED_NOTE : null;
  return { refusal: refusal && vision ? `${refusal}; ${vision}` : refusal, note: vision };
}

/** Inspects `dir` on this host. Never throws for a bad directory: the answer says what is wrong. */
export async function inspectModelDir(dirInput: string): Promise<ModelInspectResult> {
  const dir = resolve(dirInput);
  const refused = (reason: string, rest: Partial<ModelInspectResult> = {}): ModelInspectResult => ({
    dir,
    status: 'refused',
    reason,
    config: null,
    weights: noWeights,
    tokenizer: { present: false, chatTemplate: false },
    roles: [],
    ...rest,
  });
  let entries: string[];
  try {
    if (!(await stat(dir)).isDirectory()) return refused(`${dir} is a file, not a model directory (pass the folder holding config.json)`);
    entries = await readdir(dir);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return refused(`${dir} does not exist on this host`);
    if (code === 'EACCES') return refused(`${dir} is not readable by the agent (permission denied)`);
    return refused(`cannot read ${dir}: ${(e as Error).message}`);
  }
  if (!entries.includes('config.json')) {
    return refused(`${dir} has no config.json: it is not a HuggingFace model directory${entries.length === 0 ? ' (it is empty)' : ''}`);
  }
  let config: ModelConfigSpec;
  try {
    config = await readModelConfig(dir);
  } catch (e) {
    return refused(e instanceof CheckpointError ? e.message : `config.json: ${(e as Error).message}`);
  }
  const tokenizer = await tokenizerOf(dir);
  const { refusal, note } = engineNotes(config);
  const hasWeights = entries.includes(singleFileName) || entries.includes(indexFileName);
  const otherWeights = entries.filter((e) => /\.(safetensors|bin|pt|pth|gguf)$/.test(e));
  if (!hasWeights && otherWeights.length === 0) {
    if (refusal) return refused(refusal, { config: summarizeConfig(config), tokenizer });
    const reason = note ? `${CONFIG_ONLY_REASON}; ${note}` : CONFIG_ONLY_REASON;
    return { dir, status: 'config-only', reason, config: summarizeConfig(config), weights: noWeights, tokenizer, roles: rolesWith(tokenizer) };
  }
  try {
    // The colocated spec checks every tensor of the model against config.json.
    const { spec } = await buildLoadSpec(dir, 'colocated');
    const sizes = await Promise.all(spec.files.map(async (f) => (await stat(f)).size));
    const weights = { present: true, files: spec.files.length, bytes: sizes.reduce((a, b) => a + b, 0) };
    const tensors = new Map(spec.tensors.map((t) => [t.name, t]));
    const bytesOf = (name: string): number => {
      const ref = tensors.get(name);
      return ref ? ref.byteLength / Math.max(1, numElements(ref.shape)) : 2;
    };
    const summary = summarizeConfig(config, bytesOf);
    // The checkpoint is complete and consistent, but no rank can load its layer kinds yet.
    if (refusal) return refused(refusal, { config: summary, weights, tokenizer });
    if (!tokenizer.present) {
      const reason = `no tokenizer (${tokenizerFileNames.join(' and ')}): only FFN ranks can run from this directory`;
      return { dir, status: 'ready', reason: note ? `${reason}; ${note}` : reason, config: summary, weights, tokenizer, roles: rolesWith(tokenizer) };
    }
    return { dir, status: 'ready', reason: note, config: summary, weights, tokenizer, roles: rolesWith(tokenizer) };
  } catch (e) {
    return refused(e instanceof CheckpointError ? e.message : (e as Error).message, { config: summarizeConfig(config), tokenizer });
  }
}
