/**
 * The built-in model for the role, generate, serve and launch commands without --model:
 * model/defaultModel.ts decides (the demo model where this install has it, else the
 * random tiny one, created on first use); this adapter reports what it did.
 */
import { ensureDefaultModel as ensureDefault } from '../model/defaultModel.js';

/** Returns the default model directory, creating the tiny checkpoint when it is the default and missing. */
export async function ensureDefaultModel(onMessage: (message: string) => void): Promise<string> {
  try {
    const { dir, created, kind } = await ensureDefault();
    if (kind === 'tiny') onMessage(`${created ? 'created' : 'using'} the built-in tiny model with random weights in ${dir} (this install has no demo model)`);
    else onMessage(`using the demo model in ${dir}`);
    return dir;
  } catch (err) {
    throw new Error(`could not prepare the built-in model (${(err as Error).message}); pass --model DIR with an HF checkpoint`);
  }
}
