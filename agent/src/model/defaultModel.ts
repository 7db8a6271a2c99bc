/**
 * The built-in default model: $AFD_HOME/models/tiny-qwen3-moe, made on first use by
 * make-model (qwen3_moe/tiny, seed 0). `npm start` and `afd-agent role` without --model
 * call ensureDefaultModel. Safe when several processes race to create it.
 */
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { buildLoadSpec } from '@afd/native/checkpoint';
import { afdHome } from '../daemon/tokenFile.js';
import { makeModel, makeModelVersion, markerFileName, OutDirExistsError, type ModelMarker } from './makeModel.js';

/** Folder name of the default model under $AFD_HOME/models. */
export const defaultModelName = 'tiny-qwen3-moe';
const defaultModelRecipe = { arch: 'qwen3_moe', preset: 'tiny', seed: 0 } as const;

/** Where the default model lives for an AFD home folder. */
export function defaultModelDir(home: string = afdHome()): string {
  return join(home, 'models', defaultModelName);
}

/** True when `dir` holds the current default model, complete and valid. */
async function isCurrentDefault(dir: string): Promise<boolean> {
  let marker: Partial<ModelMarker>;
  try {
    marker = JSON.parse(await readFile(join(dir, markerFileName), 'utf8')) as Partial<ModelMarker>;
  } catch {
    return false;
  }
  const same =
    marker.version === makeModelVersion && marker.arch === defaultModelRecipe.arch && marker.preset === defaultModelRecipe.preset && marker.seed === defaultModelRecipe.seed && !marker.configOnly;
  if (!same) return false;
  try {
    await buildLoadSpec(dir, 'colocated');
    return true;
  } catch {
    return false;
  }
}

/**
 * Make sure the default model exists under `home` ($AFD_HOME, else ~/.afd) and return
 * its directory. Creates it (a few seconds on 2 cores) when missing, outdated or damaged.
 */
export async function ensureDefaultModel(
  home: string = afdHome(),
  opts: { onProgress?: (bytesDone: number, bytesTotal: number) => void } = {},
): Promise<{ dir: string; created: boolean }> {
  const dir = defaultModelDir(home);
  if (await isCurrentDefault(dir)) return { dir, created: false };
  // Replace only a damaged or outdated copy; when none exists, a racing maker wins cleanly.
  const force = existsSync(dir);
  try {
    await makeModel({ ...defaultModelRecipe, outDir: dir, force, ...(opts.onProgress ? { onProgress: opts.onProgress } : {}) });
    return { dir, created: true };
  } catch (err) {
    // Another process finished first: use its model if it is the right one.
    if (err instanceof OutDirExistsError && (await isCurrentDefault(dir))) return { dir, created: false };
    throw err;
  }
}
