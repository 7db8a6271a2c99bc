/**
 * Finds and validates the safetensors files of a HuggingFace model directory: either one
 * model.safetensors, or shards listed by model.safetensors.index.json (every weight_map
 * entry must name a shard in the directory that really contains that tensor).
 */
import { readdir, readFile, stat } from 'node:fs/promises';
import { basename, join, resolve } from 'node:path';
import type { StoredTensor } from '../modelSpec.js';
import { CheckpointError } from './errors.js';
import { readSafetensorsHeader, type SafetensorsHeader } from './safetensors.js';

/** File names of a HuggingFace checkpoint. */
export const singleFileName = 'model.safetensors';
export const indexFileName = 'model.safetensors.index.json';

/** All tensors of a checkpoint, with the files they live in. */
export interface CheckpointTensors {
  /** Absolute paths of the safetensors files. */
  files: string[];
  /** Tensor name -> validated byte range (file = index into files). */
  tensors: Map<string, StoredTensor>;
  /** Total bytes of the safetensors files. */
  totalFileBytes: number;
  /** What lists the tensors: the index file, or the single safetensors file. */
  source: string;
}

async function isFile(path: string): Promise<boolean> {
  try {
    return (await stat(path)).isFile();
  } catch {
    return false;
  }
}

async function readIndex(path: string): Promise<Map<string, string>> {
  let json: unknown;
  try {
    json = JSON.parse(await readFile(path, 'utf8'));
  } catch (err) {
    throw new CheckpointError(path, `cannot read the shard index: ${(err as Error).message}`, { fix: 'the index must be valid JSON with a weight_map' });
  }
  const weightMap = (json as { weight_map?: unknown } | null)?.weight_map;
  if (typeof weightMap !== 'object' || weightMap === null || Array.isArray(weightMap)) {
    throw new CheckpointError(path, 'weight_map is missing or not an object of tensor name -> shard file name');
  }
  const map = new Map<string, string>();
  for (const [tensor, file] of Object.entries(weightMap)) {
    if (typeof file !== 'string' || file.length === 0) throw new CheckpointError(path, `weight_map entry is ${JSON.stringify(file)}, not a file name`, { tensor });
    if (basename(file) !== file || file === '.' || file === '..') {
      throw new CheckpointError(path, `weight_map names shard ${JSON.stringify(file)}, which is not a plain file name in the model directory`, { tensor });
    }
    map.set(tensor, file);
  }
  if (map.size === 0) throw new CheckpointError(path, 'weight_map is empty');
  return map;
}

function addTensors(out: Map<string, StoredTensor>, header: SafetensorsHeader, fileIndex: number, only?: (name: string) => boolean): void {
  for (const t of header.tensors.values()) {
    if (only && !only(t.name)) continue;
    out.set(t.name, { name: t.name, file: fileIndex, dtype: t.dtype, shape: t.shape, offset: t.offset, byteLength: t.byteLength });
  }
}

/** Open a model directory's safetensors files and validate every header. */
export async function openCheckpoint(modelDir: string): Promise<CheckpointTensors> {
  const dir = resolve(modelDir);
  let entries: string[];
  try {
    entries = await readdir(dir);
  } catch (err) {
    throw new CheckpointError(dir, `cannot read the model directory: ${(err as Error).message}`, { fix: 'pass a HuggingFace model directory (config.json + *.safetensors)' });
  }
  const indexPath = join(dir, indexFileName);
  const tensors = new Map<string, StoredTensor>();
  const files: string[] = [];
  let totalFileBytes = 0;
  if (await isFile(indexPath)) {
    const weightMap = await readIndex(indexPath);
    const shardNames = [...new Set(weightMap.values())];
    for (const [fileIndex, shard] of shardNames.entries()) {
      const path = join(dir, shard);
      if (!(await isFile(path))) {
        const tensor = [...weightMap].find(([, f]) => f === shard)![0];
        throw new CheckpointError(indexPath, `shard ${shard} listed in weight_map does not exist in ${dir}`, { tensor, fix: 'download the missing shard' });
      }
      const header = await readSafetensorsHeader(path);
      for (const [tensor, file] of weightMap) {
        if (file === shard && !header.tensors.has(tensor)) {
          throw new CheckpointError(indexPath, `weight_map puts this tensor in ${shard}, but that shard does not contain it`, { tensor, fix: 'the index and shards disagree; download the checkpoint again' });
        }
      }
      addTensors(tensors, header, fileIndex, (name) => weightMap.get(name) === shard);
      files.push(path);
      totalFileBytes += header.fileBytes;
    }
    return { files, tensors, totalFileBytes, source: indexPath };
  }
  const singlePath = join(dir, singleFileName);
  if (await isFile(singlePath)) {
    const header = await readSafetensorsHeader(singlePath);
    addTensors(tensors, header, 0);
    return { files: [singlePath], tensors, totalFileBytes: header.fileBytes, source: singlePath };
  }
  const found = entries.filter((e) => /\.(safetensors|bin|pt|pth|gguf)$/.test(e));
  const hint = found.some((e) => /\.(bin|pt|pth)$/.test(e))
    ? 'PyTorch .bin checkpoints are not supported: convert with transformers (save_pretrained(dir, safe_serialization=True))'
    : found.length > 0
      ? `found ${found.join(', ')} but no index; a sharded checkpoint needs ${indexFileName}`
      : 'download the model weights (*.safetensors) into this directory';
  throw new CheckpointError(dir, `no ${singleFileName} or ${indexFileName}`, { fix: hint });
}
