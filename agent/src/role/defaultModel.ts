/**
 * The built-in default model: a deterministic tiny Qwen3-MoE checkpoint (with the real
 * Qwen3 tokenizer) in $AFD_HOME/models/tiny-qwen3-moe, written by make-model on first use.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { makeModel } from '../model/makeModel.js';
import { defaultModelDir } from './roleSettings.js';

/** Returns the default model directory, creating the checkpoint when it is missing. */
export async function ensureDefaultModel(onMessage: (message: string) => void): Promise<string> {
  const dir = defaultModelDir();
  if (existsSync(join(dir, 'config.json')) && existsSync(join(dir, 'tokenizer.json'))) return dir;
  onMessage(`creating the built-in tiny model in ${dir}`);
  try {
    await makeModel({ arch: 'qwen3_moe', preset: 'tiny', outDir: dir, seed: 0, force: true, configOnly: false });
  } catch (err) {
    throw new Error(`could not create the built-in model in ${dir} (${(err as Error).message}); pass --model DIR with an HF checkpoint`);
  }
  return dir;
}
