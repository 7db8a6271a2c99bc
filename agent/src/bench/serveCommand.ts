/** `afd-bench serve`: the serving benchmark client (see serve/runServeBench.ts). */
import { writeFileSync } from 'node:fs';
import type { Command } from 'commander';
import cliProgress from 'cli-progress';
import { formatServeReport } from './serve/report.js';
import { runServeBench } from './serve/runServeBench.js';
import { agentEnv } from '../util/env.js';

interface ServeCliOptions {
  baseUrl: string;
  model?: string;
  endpoint: string;
  apiKey?: string;
  numPrompts: string;
  randomInputLen: string;
  randomOutputLen: string;
  randomRangeRatio: string;
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

export function registerServeBench(program: Command): void {
  program
    .command('serve')
    .description('benchmark an OpenAI-compatible server with random prompts (like `vllm bench serve`)')
    .requiredOption('--base-url <url>', 'server base URL, e.g. http://127.0.0.1:8000')
    .option('--model <name>', 'model name (default: the first of /v1/models)')
    .option('--endpoint <path>', 'streaming endpoint: /v1/completions, or /v1/chat/completions (prompt sent as one user message)', '/v1/completions')
    .option('--api-key <key>', 'bearer token (default: $OPENAI_API_KEY)')
    .option('--num-prompts <n>', 'requests to send', '100')
    .option('--random-input-len <n>', 'prompt length in tokens (approximately; usage reports the exact count)', '128')
    .option('--random-output-len <n>', 'max_tokens of each request', '128')
    .option('--random-range-ratio <r>', 'draw lengths from [len*(1-r), len*(1+r)]', '0')
    .option('--request-rate <rps>', 'requests per second with Poisson arrivals, or inf', 'inf')
    .option('--max-concurrency <n>', 'most requests in flight')
    .option('--ignore-eos', 'keep generating past EOS so every request produces max_tokens')
    .option('--seed <n>', 'seed of the random prompts and arrivals', '0')
    .option('--percentiles <list>', 'comma-separated percentiles to report', '99')
    .option('--temperature <t>', 'sampling temperature', '0')
    .option('--extra-body <json>', 'JSON object merged into every request body, e.g. \'{"logprobs":true,"top_logprobs":5}\'')
    .option('--json-out <file>', 'also write the result as JSON')
    .option('--no-progress', 'no progress bar')
    .action(async (o: ServeCliOptions) => {
      const numPrompts = num('--num-prompts', o.numPrompts, 1, true);
      const bar = o.progress ? new cliProgress.SingleBar({ stream: process.stderr, format: 'requests [{bar}] {value}/{total} | {duration_formatted}' }, cliProgress.Presets.shades_classic) : null;
      bar?.start(numPrompts, 0);
      const result = await runServeBench({
        baseUrl: o.baseUrl,
        model: o.model,
        endpoint: o.endpoint,
        apiKey: o.apiKey ?? agentEnv().openaiApiKey,
        numPrompts,
        randomInputLen: num('--random-input-len', o.randomInputLen, 1, true),
        randomOutputLen: num('--random-output-len', o.randomOutputLen, 1, true),
        randomRangeRatio: num('--random-range-ratio', o.randomRangeRatio, 0, false),
        requestRate: num('--request-rate', o.requestRate, 0.001, false),
        maxConcurrency: o.maxConcurrency === undefined ? undefined : num('--max-concurrency', o.maxConcurrency, 1, true),
        ignoreEos: o.ignoreEos ?? false,
        seed: num('--seed', o.seed, 0, true),
        percentiles: o.percentiles.split(',').map((p) => num('--percentiles', p.trim(), 0, false)),
        temperature: num('--temperature', o.temperature, 0, false),
        extraBody: extraBodyOf(o.extraBody),
        onProgress: (done) => bar?.update(done),
      }).finally(() => bar?.stop());
      process.stdout.write(`${formatServeReport(result)}\n`);
      if (o.jsonOut) writeFileSync(o.jsonOut, `${JSON.stringify({ date: new Date().toISOString(), ...result }, null, 2)}\n`);
      if (result.completed === 0) process.exitCode = 1;
    });
}
