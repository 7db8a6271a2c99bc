/**
 * buildLoadSpec: read config.json and the safetensors headers of a model directory,
 * check every tensor the role needs (present, right shape) and produce the ModelLoadSpec
 * the native engine maps. Also reports the resident weight bytes of each role.
 */
import { readdir, readFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import type { ExpertRange, LoadFormat } from '@afd/shared';
import type { ModelConfigSpec, ModelLoadSpec, ModelRole, TensorRef } from '../modelSpec.js';
import { CheckpointError, formatShape } from './errors.js';
import { parseModelConfig } from './config.js';
import { dummyLoadSpec } from './dummy.js';
import { familyRowOf } from './families.js';
import { fusedExpertRef, type FusedExpertNames } from './fusedExperts.js';
import { indexFileName, openCheckpoint, singleFileName, type CheckpointTensors } from './shards.js';
import { bindingOf, expertRangeFor, modelTensors, roleTensors, type ExpectedTensor } from './tensorTables.js';

/** Options of buildLoadSpec. */
export interface LoadSpecOptions {
  /** Place the MoE router on the attention role (ignored for dense models). */
  computeGateOnAttention?: boolean;
  /**
   * Expert parallelism (ffn role only): this FFN rank of `numRanks` loads only its routed
   * experts, e -> floor(e * F / E); dense layers and the router stay whole. Ignored for
   * dense models and when numRanks is 1.
   */
  expertParallel?: { rank: number; numRanks: number };
}

/** A role's load spec and the weight bytes it keeps resident. */
export interface RoleLoadSpec {
  spec: ModelLoadSpec;
  /** Sum of the byte lengths of the role's tensors (as stored in the checkpoint). */
  residentBytes: number;
}

async function readJson(path: string, required: boolean): Promise<unknown> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    if (!required) return undefined;
    throw new CheckpointError(path, `cannot read: ${(err as Error).message}`, { fix: 'a HuggingFace model directory needs config.json' });
  }
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new CheckpointError(path, `not valid JSON: ${(err as Error).message}`);
  }
}

/** Read and validate config.json (plus generation_config.json's eos ids when present). */
export async function readModelConfig(modelDir: string): Promise<ModelConfigSpec> {
  const dir = resolve(modelDir);
  const configPath = join(dir, 'config.json');
  const config = await readJson(configPath, true);
  const generation = await readJson(join(dir, 'generation_config.json'), false);
  return parseModelConfig(configPath, config, generation);
}

function sameShape(a: readonly number[], b: readonly number[]): boolean {
  return a.length === b.length && a.every((d, i) => d === b[i]);
}

function missingHint(ckpt: CheckpointTensors, want: ExpectedTensor): string {
  const names = [...ckpt.tensors.keys()];
  if (names.some((n) => /\.experts\.(gate_up_proj|down_proj)$/.test(n))) {
    return 'the checkpoint stores experts fused (transformers 5 in-memory layout); save it in the per-expert HuggingFace Hub layout';
  }
  const layerPrefix = want.name.split('.').slice(0, 3).join('.');
  const near = names.filter((n) => n.startsWith(`${layerPrefix}.`)).slice(0, 4);
  return near.length > 0 ? `nearby tensors: ${near.join(', ')}; is config.json for this checkpoint?` : 'is config.json for this checkpoint?';
}

/** A family's fused expert layout (fusedExperts.ts) and the expert count its shapes need. */
export interface FusedExperts {
  names: FusedExpertNames;
  numExperts: number;
}

/** The fused expert layout a config's family accepts, if any. */
function fusedOf(config: ModelConfigSpec): FusedExperts | undefined {
  const names = familyRowOf(config).fusedExperts;
  return names && config.numExperts > 0 ? { names, numExperts: config.numExperts } : undefined;
}

/**
 * Check the expected tensors against the checkpoint and return their refs with their slots,
 * in expected order. With `fused`, a routed expert's projection missing under its own name
 * is found inside the layer's fused expert tensor.
 */
export function resolveTensors(ckpt: CheckpointTensors, expected: readonly ExpectedTensor[], role: ModelRole, fused?: FusedExperts): TensorRef[] {
  return expected.map((want) => {
    const ref = ckpt.tensors.get(want.name) ?? (fused ? fusedExpertRef(ckpt, fused.names, fused.numExperts, want) : undefined);
    if (!ref) {
      throw new CheckpointError(ckpt.source, `is required by the ${role} role but missing from the checkpoint`, {
        tensor: want.name,
        fix: missingHint(ckpt, want),
      });
    }
    if (!sameShape(ref.shape, want.shape)) {
      throw new CheckpointError(ckpt.files[ref.file]!, `has shape ${formatShape(ref.shape)} but config.json needs ${formatShape(want.shape)} (${want.derivation})`, {
        tensor: want.name,
        fix: 'config.json and the weights disagree; use the config that came with the checkpoint',
      });
    }
    return { ...bindingOf(want), ...ref };
  });
}

function specForRole(config: ModelConfigSpec, ckpt: CheckpointTensors, role: ModelRole, opts: LoadSpecOptions): RoleLoadSpec {
  const gateOnAttention = (opts.computeGateOnAttention ?? false) && config.numExperts > 0;
  const range = expertRangeFor(config, role, opts.expertParallel);
  const wanted = roleTensors(config, role, gateOnAttention, range);
  const refs = resolveTensors(ckpt, wanted, role, fusedOf(config));
  const usedFiles = [...new Set(refs.map((r) => r.file))].sort((a, b) => a - b);
  const remap = new Map(usedFiles.map((f, i) => [f, i]));
  const tensors = refs.map((r) => ({ ...r, shape: [...r.shape], file: remap.get(r.file)! }));
  const residentBytes = tensors.reduce((sum, t) => sum + t.byteLength, 0);
  return {
    spec: { config, role, computeGateOnAttention: gateOnAttention, ...(range ? { expertRange: range } : {}), files: usedFiles.map((f) => ckpt.files[f]!), tensors },
    residentBytes,
  };
}

async function openValidated(modelDir: string): Promise<{ config: ModelConfigSpec; ckpt: CheckpointTensors }> {
  const config = await readModelConfig(modelDir);
  const ckpt = await openCheckpoint(modelDir);
  // Validate every tensor of the model, not only one role's: a checkpoint broken in the
  // other half would otherwise start one role and fail the other.
  resolveTensors(ckpt, modelTensors(config), 'colocated', fusedOf(config));
  return { config, ckpt };
}

/**
 * Build the load spec of one role: exactly the tensors the role needs, and only the files
 * that hold them. Throws CheckpointError naming file, tensor and problem.
 */
export async function buildLoadSpec(modelDir: string, role: ModelRole, opts: LoadSpecOptions = {}): Promise<RoleLoadSpec> {
  const { config, ckpt } = await openValidated(modelDir);
  return specForRole(config, ckpt, role, opts);
}

/** Resident weight bytes of every role of a model (with the given gate placement). */
export async function residentBytesByRole(modelDir: string, opts: LoadSpecOptions = {}): Promise<Record<ModelRole, number>> {
  const { config, ckpt } = await openValidated(modelDir);
  const bytes = (role: ModelRole): number => specForRole(config, ckpt, role, opts).residentBytes;
  return { colocated: bytes('colocated'), attention: bytes('attention'), ffn: bytes('ffn') };
}

/** Options of roleLoadSpec. */
export interface RoleSpecOptions extends LoadSpecOptions {
  /** Where the weights come from (default auto). */
  loadFormat?: LoadFormat;
  /** Seed of dummy weights (default 0). */
  seed?: number;
  /** Called once with a notice (safetensors present but ignored by the dummy format). */
  onNote?: (message: string) => void;
}

/** True when the directory holds a safetensors checkpoint (single file or sharded index). */
export async function hasSafetensors(modelDir: string): Promise<boolean> {
  try {
    const entries = await readdir(resolve(modelDir));
    return entries.includes(singleFileName) || entries.includes(indexFileName) || entries.some((e) => e.endsWith('.safetensors'));
  } catch {
    return false;
  }
}

/**
 * The load spec of one role under a load format (shared/src/config/loadFormat.ts):
 * auto and safetensors read the checkpoint; auto with only a config fails naming
 * --load-format dummy; dummy generates every tensor from config.json and the seed.
 */
export async function roleLoadSpec(modelDir: string, role: ModelRole, opts: RoleSpecOptions = {}): Promise<RoleLoadSpec> {
  const format = opts.loadFormat ?? 'auto';
  if (format === 'dummy') {
    const config = await readModelConfig(modelDir);
    if (await hasSafetensors(modelDir)) {
      opts.onNote?.(`load format dummy: the safetensors files in ${resolve(modelDir)} are ignored (random weights from seed ${opts.seed ?? 0})`);
    }
    return dummyLoadSpec(config, role, {
      seed: opts.seed ?? 0,
      ...(opts.computeGateOnAttention !== undefined ? { computeGateOnAttention: opts.computeGateOnAttention } : {}),
      ...(opts.expertParallel ? { expertParallel: opts.expertParallel } : {}),
    });
  }
  if (!(await hasSafetensors(modelDir))) {
    await readModelConfig(modelDir); // a missing or broken config.json is the first thing to say
    throw new CheckpointError(resolve(modelDir), `holds config.json but no weights (${singleFileName} or ${indexFileName})`, {
      fix: 'download the *.safetensors weights, or serve random weights of this shape with --load-format dummy',
    });
  }
  return buildLoadSpec(modelDir, role, opts);
}

/** What one FFN rank of an expert-parallel group loads: its experts and its resident bytes. */
export interface FfnRankLoad {
  rank: number;
  /** Routed experts [start, end) of every MoE layer. */
  experts: ExpertRange;
  /** Bytes of the tensors it maps (dense layers, router and its experts). */
  residentBytes: number;
  /** Of those, the bytes of its routed experts. */
  expertBytes: number;
}

/**
 * The load report of an FFN group: per FFN rank, its expert range and the bytes it holds
 * (with expert parallelism each rank holds about 1/F of the expert bytes; without, each
 * holds all of them).
 */
export async function ffnLoadByRank(modelDir: string, numRanks: number, opts: Omit<LoadSpecOptions, 'expertParallel'> & { expertParallel: boolean }): Promise<FfnRankLoad[]> {
  const { config, ckpt } = await openValidated(modelDir);
  return Array.from({ length: numRanks }, (_, rank) => {
    const ep = opts.expertParallel && config.numExperts > 0 && numRanks > 1;
    const base: LoadSpecOptions = opts.computeGateOnAttention === undefined ? {} : { computeGateOnAttention: opts.computeGateOnAttention };
    const { spec, residentBytes } = specForRole(config, ckpt, 'ffn', ep ? { ...base, expertParallel: { rank, numRanks } } : base);
    const expertBytes = spec.tensors.filter((t) => t.expert !== undefined).reduce((sum, t) => sum + t.byteLength, 0);
    return { rank, experts: spec.expertRange ?? { start: 0, end: config.numExperts }, residentBytes, expertBytes };
  });
}
