/**
 * The built-in default model, what `npm start`, `generate`, `launch`, `serve` and `role`
 * use without --model: the demo model (demoModel.ts) where this install carries it, else
 * the random tiny Qwen3-MoE in $AFD_HOME/models/tiny-qwen3-moe, made on first use by
 * make-model (qwen3_moe/tiny, seed 0) and made again when its afd-model.json names another
 * generator version or recipe, or its files do not load. Safe when several processes race
 * to create or repair it: one makes it under a lock file, the others wait and use it.
 */
import { existsSync, readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { buildLoadSpec } from '@afd/native/checkpoint';
import type { DefaultModel } from '@afd/shared';
import { afdHome, afdModelsDir } from '../util/afdHome.js';
import { withFileLock } from '../util/fileLock.js';
import { demoModelName, findDemoModelDir } from './demoModel.js';
import { makeModel, makeModelVersion, markerFileName, OutDirExistsError, type ModelMarker } from './makeModel.js';
import { modelInfoFileName } from './servedModelInfo.js';

/** Folder name of the random tiny model under $AFD_HOME/models. */
export const tinyModelName = 'tiny-qwen3-moe';
const defaultModelRecipe = { arch: 'qwen3_moe', preset: 'tiny', seed: 0 } as const;

/** Where the random tiny model lives for an AFD home folder. */
export function tinyModelDir(home: string = afdHome()): string {
  return join(afdModelsDir(home), tinyModelName);
}

/** The name the default model is served under (its folder name): the demo model's when present. */
export function defaultServedModelName(env: NodeJS.ProcessEnv = process.env): string {
  return findDemoModelDir(env) ? demoModelName : tinyModelName;
}

/** The description line of a model folder's afd-model-info.json; null when it has none or it does not read. */
function descriptionOf(dir: string): string | null {
  try {
    const info = JSON.parse(readFileSync(join(dir, modelInfoFileName), 'utf8')) as { description?: unknown };
    return typeof info.description === 'string' && info.description !== '' ? info.description : null;
  } catch {
    return null; // optional; a broken file is reported where the model is served
  }
}

/**
 * Which model a launch without --model gets on this host, without making it: the demo
 * model where this install carries it, else the random tiny one in `modelsDir`. The
 * launch (ensureDefaultModel) and the inventory the console shows both ask this.
 */
export function describeDefaultModel(modelsDir: string = afdModelsDir(), env: NodeJS.ProcessEnv = process.env): DefaultModel {
  const demo = findDemoModelDir(env);
  if (demo) return { kind: 'demo', name: demoModelName, dir: demo, description: descriptionOf(demo) };
  return { kind: 'tiny', name: tinyModelName, dir: join(modelsDir, tinyModelName), description: null };
}

/** True when `dir` holds the current default model (this generator version and recipe), complete and valid. */
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

/** Which model the default is. */
export type DefaultModelKind = 'demo' | 'tiny';

/** The default model's folder: the demo model when present, else the tiny one (made when missing). */
export async function ensureDefaultModel(
  home: string = afdHome(),
  opts: { onProgress?: (bytesDone: number, bytesTotal: number) => void } = {},
): Promise<{ dir: string; created: boolean; kind: DefaultModelKind }> {
  const chosen = describeDefaultModel(afdModelsDir(home));
  if (chosen.kind === 'demo') return { dir: chosen.dir, created: false, kind: 'demo' };
  return { ...(await ensureTinyModel(home, opts)), kind: 'tiny' };
}

/**
 * The default model for a command run without --model (role, generate, and the launches
 * of serve and launch): its folder, after telling `onMessage` which model it is and whether
 * it was just made. A failure says what to do instead.
 */
export async function prepareDefaultModel(onMessage: (message: string) => void, home: string = afdHome()): Promise<string> {
  try {
    const { dir, created, kind } = await ensureDefaultModel(home);
    if (kind === 'tiny') onMessage(`${created ? 'created' : 'using'} the built-in tiny model with random weights in ${dir} (this install has no demo model)`);
    else onMessage(`using the demo model in ${dir}`);
    return dir;
  } catch (err) {
    throw new Error(`could not prepare the built-in model (${(err as Error).message}); pass --model DIR with an HF checkpoint`);
  }
}

/**
 * Make sure the random tiny model exists under `home` ($AFD_HOME, else ~/.afd) and return
 * its directory. Creates it (a few seconds on 2 cores) when missing, outdated or damaged,
 * holding <home>/models/tiny-qwen3-moe.lock so that racing processes make it once.
 */
export async function ensureTinyModel(
  home: string = afdHome(),
  opts: { onProgress?: (bytesDone: number, bytesTotal: number) => void } = {},
): Promise<{ dir: string; created: boolean }> {
  const dir = tinyModelDir(home);
  if (await isCurrentDefault(dir)) return { dir, created: false };
  return withFileLock(`${dir}.lock`, async () => {
    // Another process may have made it while this one waited for the lock.
    if (await isCurrentDefault(dir)) return { dir, created: false };
    try {
      // Replace only a damaged or outdated copy (never a folder that does not look like a model).
      await makeModel({ ...defaultModelRecipe, outDir: dir, force: existsSync(dir), ...(opts.onProgress ? { onProgress: opts.onProgress } : {}) });
      return { dir, created: true };
    } catch (err) {
      // A process that took over a stale lock finished first: use its model if it is the right one.
      if (err instanceof OutDirExistsError && (await isCurrentDefault(dir))) return { dir, created: false };
      throw err;
    }
  });
}
