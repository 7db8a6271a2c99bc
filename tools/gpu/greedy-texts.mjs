// Greedy completions of a fixed batch of prompts against an OpenAI-compatible endpoint,
// written as JSON; with --compare, the texts must equal those of an earlier run. Node
// builtins only (runs on the GPU host).
// The 8 prompts go as ONE /v1/completions request (prompt: [...]): the server admits a
// batch into one scheduler step, so the decode batch is the same on every run (8 separate
// requests may land in different steps, and batch composition can change float results).
//   node greedy-texts.mjs --url http://127.0.0.1:18000 --out texts.json [--max-tokens 32] [--compare ref.json] [--stats URL/afd/stats] [--long]
// --long puts a ~120-token preamble before each prompt (long enough for a prefill rank to take it).
// Each token's top-2 logprobs are kept: where a text differs from the --compare run's, the
// report gives the first differing token and both runs' top-1 minus top-2 margin there (a
// flip at a near-tie has a small margin on both sides).
import { readFileSync, writeFileSync } from 'node:fs';
import { arg } from './cli-arg.mjs';

const url = arg('--url');
const out = arg('--out');
const compare = arg('--compare');
const maxTokens = Number(arg('--max-tokens', '32'));
const prompts = [
  'The capital of France is',
  'def fibonacci(n):',
  'In 1969, the first',
  'A lighthouse keeper lived alone on',
  'Water boils at',
  'The quick brown fox',
  'Once upon a time, in a kingdom by the sea,',
  '1, 2, 3, 5, 8, 13,',
];

const models = await (await fetch(`${url}/v1/models`)).json();
const model = models.data[0].id;
const preamble = process.argv.includes('--long')
  ? 'The following notes were written by a careful archivist who kept records of ships, storms, harvests and festivals for many years in a small harbour town. Each entry is short, plain and exact, and the archivist never repeats a fact twice. Read the last line and continue it in the same plain style, without any heading or list. '.repeat(2)
  : '';
const res = await fetch(`${url}/v1/completions`, {
  method: 'POST',
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify({ model, prompt: prompts.map((p) => preamble + p), max_tokens: maxTokens, temperature: 0, ignore_eos: true, logprobs: 2 }),
});
if (res.status !== 200) throw new Error(`/v1/completions: HTTP ${res.status} ${await res.text()}`);
const { choices } = await res.json();
if (choices.length !== prompts.length) throw new Error(`/v1/completions: ${choices.length} choices for ${prompts.length} prompts`);
const texts = prompts.map((prompt, i) => {
  const choice = choices.find((c) => c.index === i);
  if (!choice) throw new Error(`/v1/completions: no choice with index ${i} (${prompt})`);
  return choice.text;
});
// Per text: its tokens and, per token, the top-1 minus top-2 logprob (null where absent).
const steps = prompts.map((_, i) => {
  const lp = choices.find((c) => c.index === i).logprobs;
  const tokens = lp?.tokens ?? [];
  const margins = (lp?.top_logprobs ?? []).map((top) => {
    const v = Object.values(top ?? {}).sort((a, b) => b - a);
    return v.length >= 2 ? v[0] - v[1] : null;
  });
  return { tokens, margins };
});
const report = { url, model, maxTokens, prompts, texts, steps };
const stats = arg('--stats');
if (stats) report.stats = await (await fetch(stats)).json();
if (compare) {
  const ref = JSON.parse(readFileSync(compare, 'utf8'));
  report.comparedWith = compare;
  report.equal = texts.map((t, i) => t === ref.texts[i]);
  report.allEqual = report.equal.every(Boolean);
  report.firstDiffs = texts.map((t, i) => {
    if (t === ref.texts[i] || !ref.steps) return null;
    const mine = steps[i].tokens;
    const theirs = ref.steps[i].tokens;
    let k = 0;
    while (k < mine.length && k < theirs.length && mine[k] === theirs[k]) k++;
    return { prompt: i, token: k, margin: steps[i].margins[k] ?? null, refMargin: ref.steps[i].margins[k] ?? null };
  }).filter(Boolean);
}
writeFileSync(out, JSON.stringify(report, null, 2));
console.log(JSON.stringify({ model, allEqual: report.allEqual ?? null, equal: report.equal ?? null, firstDiffs: report.firstDiffs ?? null }));
