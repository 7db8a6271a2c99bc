/**
 * `afd-bench serve`: the serving benchmark client (see serve/runServeBench.ts), over the
 * random dataset (like `vllm bench serve --dataset-name random`) or the multi-turn one
 * (serve/runMultiTurn.ts: conversations sharing one system prompt, for prefix caching).
 */
import { writeFileSync } from 'node:fs';
import type { Command } from 'commander';
import cliProgress from 'cli-progress';
import { formatServeReport } from './serve/report.js';
import { runMultiTurnBench } from './serve/runMultiTurn.js';
import { runServeBench, type ServeCommonOptions } from './serve/runServeBench.js';
import { agentEnv } from '../util/env.js';

interface ServeCliOptions {
  baseUrl: string;
  model?: string;
  datasetName: string;
  endpoint?: string;
  apiKey?: string;
  numPrompts: string;
  randomInputLen: string;
  randomOutputLen: string;
  randomRangeRatio: string;
  sharedPrefixLen: string;
  numConversations: string;
  turns: string;
  turnInputLen: string;
  turnOutputLen: string;
  requestRate: string;
  maxConcurrency?: string;
  ignoreEos?: boolean;
  seed: string;
  percentiles: string;
  temperature: string;
  extraBody?: string;
  jsonOut?: string;
  progress: boolean;
}

function num(flag: string, v: string, min: number, integer: boolean): number {
  const n = v === 'inf' ? Infinity : Number(v);
  if (Number.isNaN(n) || n < min || (integer && Number.isFinite(n) && !Number.isInteger(n))) throw new Error(`${flag} must be ${integer ? 'an integer' : 'a number'} >= ${min}, got "${v}"`);
  return n;
}

/** --extra-body: a JSON object (its fields go into every request body after the bench's own). */
export function extraBodyOf(v: string | undefined): Record<string, unknown> {
  if (v === undefined) return {};
  let parsed: unknown;
  try {
    parsed = JSON.parse(v);
  } catch (err) {
    throw new Error(`--extra-body must be a JSON object: ${(err as Error).message}`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new Error(`--extra-body must be a JSON object, got ${v}`);
  return parsed as Record<string, unknown>;
}

/** Each dataset's own flags (option attribute names): giving one to the other dataset is an error. */
const DATASET_FLAGS: Record<string, readonly string[]> = {
  random: ['numPrompts', 'randomInputLen', 'randomOutputLen', 'randomRangeRatio'],
  'multi-turn': ['sharedPrefixLen', 'numConversations', 'turns', 'turnInputLen', 'turnOutputLen'],
};

/** --dataset-name, checked against the flags given on the command line. */
export function datasetOf(name: string, givenOnCli: (attr: string) => boolean): 'random' | 'multi-turn' {
  if (name !== 'random' && name !== 'multi-turn') throw new Error(`--dataset-name must be random or multi-turn, got "${name}"`);
  for (const [other, attrs] of Object.entries(DATASET_FLAGS)) {
    if (other === name) continue;
    const given = attrs.find(givenOnCli);
    if (given) throw new Error(`--${given.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)} is a flag of the ${other} dataset, not of ${name}`);
  }
  return name;
}

export function registerServeBench(program: Command): void {
  program
    .command('serve')
    .description('benchmark an OpenAI-compatible server with random prompts or multi-turn conversations (like `vllm bench serve`)')
    .requiredOption('--base-url <url>', 'server base URL, e.g. http://127.0.0.1:8000')
    .option('--model <name>', 'model name (default: the first of /v1/models)')
    .option('--dataset-name <name>', 'random: independent random prompts; multi-turn: conversations sharing one system prompt (prefix caching), over /v1/chat/completions', 'random')
    .option('--endpoint <path>', 'streaming endpoint: /v1/completions, or /v1/chat/completions (random: the prompt as one user message) (default: /v1/completions for random, /v1/chat/completions for multi-turn)')
    .option('--api-key <key>', 'bearer token (default: $OPENAI_API_KEY)')
    .option('--num-prompts <n>', 'random: requests to send', '100')
    .option('--random-input-len <n>', 'random: prompt length in tokens (approximately; usage reports the exact count)', '128')
    .option('--random-output-len <n>', 'random: max_tokens of each request', '128')
    .option('--random-range-ratio <r>', 'random: draw lengths from [len*(1-r), len*(1+r)]', '0')
    .option('--shared-prefix-len <n>', 'multi-turn: tokens of the system prompt every conversation shares', '2000')
    .option('--num-conversations <n>', 'multi-turn: conversations to run', '64')
    .option('--turns <n>', 'multi-turn: turns (user messages) per conversation; each turn resends the history with the answers the server gave', '8')
    .option('--turn-input-len <n>', 'multi-turn: tokens of each user message', '100')
    .option('--turn-output-len <n>', 'multi-turn: max_tokens of each turn', '100')
    .option('--request-rate <rps>', 'requests per second with Poisson arrivals, or inf (multi-turn: conversation starts per second)', 'inf')
    .option('--max-concurrency <n>', 'most requests in flight (multi-turn: most conversations in flight, each sending its turns one after another)')
    .option('--ignore-eos', 'keep generating past EOS so every request produces max_tokens')
    .option('--seed <n>', 'seed of the random prompts and arrivals', '0')
    .option('--percentiles <list>', 'comma-separated percentiles to report', '99')
    .option('--temperature <t>', 'sampling temperature', '0')
    .option('--extra-body <json>', 'JSON object merged into every request body, e.g. \'{"logprobs":true,"top_logprobs":5}\'')
    .option('--json-out <file>', 'also write the result as JSON')
    .option('--no-progress', 'no progress bar')
    .action(async (o: ServeCliOptions, cmd: Command) => {
      const dataset = datasetOf(o.datasetName, (attr) => cmd.getOptionValueSource(attr) === 'cli');
      const multiTurn = dataset === 'multi-turn';
      const shape = multiTurn
        ? {
            sharedPrefixLen: num('--shared-prefix-len', o.sharedPrefixLen, 1, true),
            numConversations: num('--num-conversations', o.numConversations, 1, true),
            turns: num('--turns', o.turns, 1, true),
            turnInputLen: num('--turn-input-len', o.turnInputLen, 1, true),
            turnOutputLen: num('--turn-output-len', o.turnOutputLen, 1, true),
          }
        : null;
      const random = shape
        ? null
        : {
            numPrompts: num('--num-prompts', o.numPrompts, 1, true),
            randomInputLen: num('--random-input-len', o.randomInputLen, 1, true),
            randomOutputLen: num('--random-output-len', o.randomOutputLen, 1, true),
            randomRangeRatio: num('--random-range-ratio', o.randomRangeRatio, 0, false),
          };
      const common: ServeCommonOptions = {
        baseUrl: o.baseUrl,
        model: o.model,
        endpoint: o.endpoint ?? (multiTurn ? '/v1/chat/completions' : '/v1/completions'),
        apiKey: o.apiKey ?? agentEnv().openaiApiKey,
        requestRate: num('--request-rate', o.requestRate, 0.001, false),
        maxConcurrency: o.maxConcurrency === undefined ? undefined : num('--max-concurrency', o.maxConcurrency, 1, true),
        ignoreEos: o.ignoreEos ?? false,
        seed: num('--seed', o.seed, 0, true),
        percentiles: o.percentiles.split(',').map((p) => num('--percentiles', p.trim(), 0, false)),
        temperature: num('--temperature', o.temperature, 0, false),
        extraBody: extraBodyOf(o.extraBody),
      };
      const bar = o.progress ? new cliProgress.SingleBar({ stream: process.stderr, format: 'requests [{bar}] {value}/{total} | {duration_formatted}' }, cliProgress.Presets.shades_classic) : null;
      bar?.start(shape ? shape.numConversations * shape.turns : random!.numPrompts, 0);
      const onProgress = (done: number): void => bar?.update(done);
      const result = await (shape ? runMultiTurnBench({ ...common, ...shape, onProgress }) : runServeBench({ ...common, ...random!, onProgress })).finally(() => bar?.stop());
      process.stdout.write(`${formatServeReport(result)}\n`);
      if (o.jsonOut) writeFileSync(o.jsonOut, `${JSON.stringify({ date: new Date().toISOString(), ...result }, null, 2)}\n`);
      if (result.completed === 0) process.exitCode = 1;
    });
}
