// Greedy completions of a fixed batch of prompts against an OpenAI-compatible endpoint,
// sent concurrently (one decode batch), written as JSON; with --compare, the texts must
// equal those of an earlier run. Node builtins only (runs on the GPU host).
//   node greedy-texts.mjs --url http://127.0.0.1:18000 --out texts.json [--compare ref.json] [--stats URL/afd/stats]
import { readFileSync, writeFileSync } from 'node:fs';

const args = process.argv.slice(2);
const arg = (name, dflt) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : dflt;
};
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
const texts = await Promise.all(
  prompts.map(async (prompt) => {
    const res = await fetch(`${url}/v1/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model, prompt, max_tokens: maxTokens, temperature: 0, ignore_eos: true }),
    });
    if (res.status !== 200) throw new Error(`${prompt}: HTTP ${res.status} ${await res.text()}`);
    return (await res.json()).choices[0].text;
  }),
);
const report = { url, model, maxTokens, prompts, texts };
const stats = arg('--stats');
if (stats) report.stats = await (await fetch(stats)).json();
if (compare) {
  const ref = JSON.parse(readFileSync(compare, 'utf8'));
  report.comparedWith = compare;
  report.equal = texts.map((t, i) => t === ref.texts[i]);
  report.allEqual = report.equal.every(Boolean);
}
writeFileSync(out, JSON.stringify(report, null, 2));
console.log(JSON.stringify({ model, allEqual: report.allEqual ?? null, equal: report.equal ?? null }));
