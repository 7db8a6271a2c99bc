/**
 * `afd-agent generate`: load a model in this process (colocated, no AFD), stream the
 * continuation of one prompt to stdout, and report prefill and decode speed on stderr.
 * Runs through the same scheduler, sampler settings and detokenizer as the server.
 */
import type { Command } from 'commander';
import { countOf, MAX_DUMMY_SEED, parseLoadFormat, resolveRankConfig } from '@afd/shared';
import { prepareDefaultModel } from '../../model/defaultModel.js';
import { nativeEngineOpener } from '../../role/nativeEngine.js';
import { ServingEngine } from '../../serving/ServingEngine.js';
import { TextTokenizer } from '../../serving/tokenizer/TextTokenizer.js';

/** Notes for the person at the terminal, on stderr (stdout carries only the generated text). */
const note = (line: string): void => void process.stderr.write(`${line}\n`);

interface GenerateFlags {
  model?: string;
  prompt: string;
  maxTokens: string;
  temperature: string;
  topP: string;
  topK: string;
  seed?: string;
  chat?: boolean;
  ignoreEos?: boolean;
  backend: string;
  threads?: string;
  loadFormat: string;
}

function num(flag: string, v: string, min: number, max = Infinity, integer = false): number {
  const n = Number(v);
  if (Number.isNaN(n) || n < min || n > max || (integer && !Number.isInteger(n))) throw new Error(`${flag} must be ${integer ? 'an integer' : 'a number'} in [${min}, ${max}], got "${v}"`);
  return n;
}

export function registerGenerate(program: Command): void {
  program
    .command('generate')
    .description('generate text from a prompt in this process (colocated) and report tokens/s')
    .requiredOption('--prompt <text>', 'the prompt')
    .option('--model <dir>', 'HF checkpoint directory (default: the built-in model: the demo model, else a random tiny one)')
    .option('--max-tokens <n>', 'tokens to generate', '64')
    .option('--temperature <t>', 'sampling temperature (0 = greedy)', '0')
    .option('--top-p <p>', 'nucleus sampling mass', '1')
    .option('--top-k <k>', 'keep the k most likely tokens (0 = off)', '0')
    .option('--seed <n>', 'sampling seed (and the seed of dummy weights, default 0)')
    .option('--chat', 'wrap the prompt in the chat template as one user message')
    .option('--ignore-eos', 'keep going past EOS')
    .option('--backend <cpu|cuda|auto>', 'compute backend', 'auto')
    .option('--threads <n>', 'CPU threads')
    .option('--load-format <format>', 'weights: auto, safetensors, or dummy (random weights from --seed; config.json and a tokenizer suffice)', 'auto')
    .action(async (f: GenerateFlags) => {
      const backend = f.backend;
      if (backend !== 'cpu' && backend !== 'cuda' && backend !== 'auto') throw new Error(`--backend must be cpu, cuda or auto, got "${backend}"`);
      const maxTokens = num('--max-tokens', f.maxTokens, 1, Infinity, true);
      const modelDir = f.model ?? (await prepareDefaultModel(note));
      const tokenizer = await TextTokenizer.fromDir(modelDir);
      const tLoad = performance.now();
      const { engine, description } = await nativeEngineOpener({
        modelDir,
        role: 'colocated',
        config: resolveRankConfig({
          model: { loadFormat: parseLoadFormat(f.loadFormat), seed: f.seed === undefined ? 0 : num('--seed', f.seed, 0, MAX_DUMMY_SEED, true) },
          device: { backend, threads: f.threads === undefined ? 0 : num('--threads', f.threads, 1, 1024, true) },
        }),
        onProgress: () => undefined,
      });
      note(`loaded in ${Math.round(performance.now() - tLoad)} ms: ${description}`);
      const promptIds = f.chat ? tokenizer.encodeChat([{ role: 'user', content: f.prompt }], { addGenerationPrompt: true }) : tokenizer.encode(f.prompt);
      const serving = new ServingEngine(engine, tokenizer, {
        scheduler: { maxNumSeqs: 1, maxNumBatchedTokens: 2048, longPrefillTokenThreshold: 0, dbo: { enabled: false, decodeTokenThreshold: 32, prefillTokenThreshold: 512 } },
        maxQueuedRequests: 1,
      });
      const t0 = performance.now();
      let tFirst = 0;
      let finish = '';
      let completionTokens = 0;
      let endsWithNewline = true;
      const handle = serving.submit({
        promptIds,
        sampling: { temperature: num('--temperature', f.temperature, 0, 2), topP: num('--top-p', f.topP, 0.000001, 1), topK: num('--top-k', f.topK, 0, Infinity, true), seed: f.seed === undefined ? undefined : num('--seed', f.seed, 0, 2 ** 32 - 1, true) },
        maxTokens,
        ignoreEos: f.ignoreEos ?? false,
      });
      process.on('SIGINT', () => handle.abort());
      try {
        for await (const ev of handle.events) {
          if (ev.type === 'delta') {
            if (tFirst === 0) tFirst = performance.now();
            process.stdout.write(ev.text);
            if (ev.text !== '') endsWithNewline = ev.text.endsWith('\n');
          } else if (ev.type === 'done') {
            finish = ev.finishReason;
            completionTokens = ev.completionTokens;
          } else throw ev.error;
        }
      } finally {
        // The text ends its line whatever happens, so the shell prompt or an error starts a new one.
        if (!endsWithNewline) process.stdout.write('\n');
        await serving.close();
        await engine.close();
      }
      const t1 = performance.now();
      const prefillS = (tFirst - t0) / 1000;
      const decodeS = (t1 - tFirst) / 1000;
      const decodeTps = completionTokens > 1 && decodeS > 0 ? (completionTokens - 1) / decodeS : 0;
      note(
        `${countOf(promptIds.length, 'prompt token')} in ${(prefillS * 1000).toFixed(0)} ms (${(promptIds.length / prefillS).toFixed(1)} tokens/s prefill); ` +
          `${countOf(completionTokens, 'token')} generated in ${((t1 - t0) / 1000).toFixed(2)} s, ${decodeTps.toFixed(1)} tokens/s decode (finish: ${finish})`,
      );
    });
}
