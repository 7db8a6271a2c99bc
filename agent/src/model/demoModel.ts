/**
 * The demo model: a small Qwen3-MoE trained on English from Debian packages
 * (tools/demo-model), shipped in the repository as models/afd-demo-moe and in the agent
 * tarball as lib/models/afd-demo-moe. Found, in order, through $AFD_DEMO_MODEL_DIR ("none"
 * turns it off), a models/ folder beside the running script (the tarball), and the
 * repository's models/ folder above the running script, this module or the working
 * directory. Without it the built-in model is the random tiny one (defaultModel.ts).
 */
import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { agentEnv } from '../util/env.js';
import { searchStarts } from '../util/searchStarts.js';

/** Folder name of the demo model. */
export const demoModelName = 'afd-demo-moe';

/** What a model folder needs for the agent to serve it. */
const requiredFiles = ['config.json', 'tokenizer.json', 'tokenizer_config.json'];

function isModelDir(dir: string): boolean {
  return requiredFiles.every((f) => existsSync(join(dir, f)));
}

/** Candidate folders, most specific first. */
export function demoModelCandidates(): string[] {
  const out: string[] = [];
  for (const start of searchStarts()) {
    let dir = start;
    for (let up = 0; up < 5; up++) {
      out.push(join(dir, 'models', demoModelName));
      const parent = dirname(dir);
      if (parent === dir) break;
      dir = parent;
    }
  }
  return [...new Set(out)];
}

/** The demo model's folder, or null when this install does not carry it (or $AFD_DEMO_MODEL_DIR=none). */
export function findDemoModelDir(env: NodeJS.ProcessEnv = process.env): string | null {
  const explicit = agentEnv(env).demoModelDir;
  if (explicit !== undefined) {
    if (explicit === 'none') return null;
    if (!isModelDir(explicit)) throw new Error(`AFD_DEMO_MODEL_DIR=${explicit} is not a model folder (it needs ${requiredFiles.join(', ')}); set it to the demo model's folder, or to "none"`);
    return resolve(explicit);
  }
  return demoModelCandidates().find(isModelDir) ?? null;
}
