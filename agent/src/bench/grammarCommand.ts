/**
 * `afd-bench grammar`: compile and mask times of structured outputs on this machine's CPU
 * (grammarBench.ts). The grammar workers run this same program (bench/main.ts hands them
 * to the grammar worker). A text report on stdout; --json-out also writes the JSON.
 */
import { existsSync, readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Command } from 'commander';
import { findQwen3TokenizerDir } from '../model/tokenizerFiles.js';
import { TextTokenizer } from '../serving/tokenizer/TextTokenizer.js';
import { grammarVocabOf } from '../serving/grammar/vocab.js';
import { intFlag } from '../util/intFlag.js';
import { formatGrammarBench, runGrammarBench } from './grammarBench.js';

/** The LM head's vocabulary size: config.json's vocab_size, else the tokenizer's token count. */
function vocabSizeOf(modelDir: string): number {
  const config = join(modelDir, 'config.json');
  if (existsSync(config)) {
    const size = (JSON.parse(readFileSync(config, 'utf8')) as { vocab_size?: unknown }).vocab_size;
    if (typeof size === 'number') return size;
  }
  return grammarVocabOf(JSON.parse(readFileSync(join(modelDir, 'tokenizer.json'), 'utf8')) as Record<string, unknown>).tokens.length;
}

export function registerGrammarBench(program: Command): void {
  program
    .command('grammar')
    .description('structured outputs on the CPU: cold and cached compile of N-field JSON schemas, per-step mask time by batch size')
    .option('--model <dir>', 'model directory with tokenizer.json (default: the Qwen3 tokenizer)')
    .option('--vocab-size <n>', "mask width (default: the model's config.json vocab_size, else the tokenizer's size)")
    .option('--fields <n>', 'properties per schema', '50')
    .option('--schemas <n>', 'distinct schemas compiled cold per whitespace mode', '6')
    .option('--steps <n>', 'mask steps per batch size', '100')
    .option('--batch <list>', 'mask batch sizes, comma separated', '1,32')
    .option('--json-out <file>', 'also write the JSON report here')
    .action(async (opts: Record<string, string | undefined>) => {
      const modelDir = opts['model'] ?? findQwen3TokenizerDir();
      const tokenizer = await TextTokenizer.fromDir(modelDir);
      const eos = tokenizer.eosTokenId;
      if (eos === undefined) throw new Error(`${modelDir}: tokenizer_config.json names no eos_token; structured outputs need one`);
      const report = await runGrammarBench({
        script: process.argv[1]!,
        modelDir,
        vocabSize: opts['vocabSize'] ? intFlag('--vocab-size', opts['vocabSize'], 1) : vocabSizeOf(modelDir),
        stopTokenIds: [eos],
        fields: intFlag('--fields', opts['fields']!, 1),
        schemas: intFlag('--schemas', opts['schemas']!, 1),
        steps: intFlag('--steps', opts['steps']!, 1),
        batches: opts['batch']!.split(',').map((b) => intFlag('--batch', b.trim(), 1)),
      });
      if (opts['jsonOut']) await writeFile(opts['jsonOut'], `${JSON.stringify(report, null, 2)}\n`);
      process.stdout.write(`${formatGrammarBench(report)}\n`);
    });
}
