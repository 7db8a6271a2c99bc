// Installs what train.py wrote on the GPU host as models/afd-demo-moe/:
//   node tools/demo-model/install-checkpoint.mjs FROM [--dest DIR]
// FROM = train.py's --out (model/ + metrics.json); DIR defaults to models/afd-demo-moe.
// Copies the checkpoint files, writes training-metrics.json (metrics without the golden
// logits) and golden.json (the transformers reference the engine's golden test compares
// with), adds afd-model-info.json (the console's header and example prompts), and checks
// that the folder is complete. Then: afd-bench demo-eval and write-card.mjs (printed).
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';

const root = new URL('../..', import.meta.url).pathname;
const name = 'afd-demo-moe';
const { values, positionals } = parseArgs({ options: { dest: { type: 'string' } }, allowPositionals: true });
const dest = values.dest ?? join(root, 'models', name);
const from = positionals[0];

function fail(message) {
  console.error(`install-checkpoint: ${message}`);
  process.exit(1);
}

if (!from) fail('usage: node tools/demo-model/install-checkpoint.mjs FROM (the folder train.py wrote: model/ and metrics.json)');
const modelDir = join(from, 'model');
const metricsPath = join(from, 'metrics.json');
for (const p of [modelDir, metricsPath]) if (!existsSync(p)) fail(`${p} does not exist: FROM must be train.py's --out folder`);
const metrics = JSON.parse(readFileSync(metricsPath, 'utf8'));
if (metrics.model_name !== name) fail(`${metricsPath} is for model ${metrics.model_name}, not ${name}`);
if (metrics.smoke) console.warn('install-checkpoint: warning: these are the files of a --smoke run');
if (!metrics.heldout || !metrics.export) fail(`${metricsPath} has no held-out or export section: the run did not finish (see its log)`);

const files = readdirSync(modelDir).filter((f) => statSync(join(modelDir, f)).isFile());
const required = ['config.json', 'generation_config.json', 'tokenizer.json', 'tokenizer_config.json'];
const missing = required.filter((f) => !files.includes(f));
if (missing.length) fail(`${modelDir} lacks ${missing.join(', ')}`);
const weights = files.filter((f) => f.endsWith('.safetensors'));
if (weights.length === 0) fail(`${modelDir} has no safetensors`);
if (weights.length > 1) {
  if (!files.includes('model.safetensors.index.json')) fail(`${modelDir} has ${weights.length} shards but no model.safetensors.index.json`);
  const index = JSON.parse(readFileSync(join(modelDir, 'model.safetensors.index.json'), 'utf8'));
  const named = new Set(Object.values(index.weight_map ?? {}));
  const absent = [...named].filter((f) => !weights.includes(f));
  if (absent.length) fail(`the index names shards that did not come back: ${absent.join(', ')}`);
}
for (const [f, bytes] of Object.entries(metrics.export.files ?? {})) {
  if (!files.includes(f)) fail(`${f} (listed in metrics.export.files) is missing from ${modelDir}`);
  const size = statSync(join(modelDir, f)).size;
  if (size !== bytes) fail(`${f} is ${size} bytes here but ${bytes} on the GPU host: the transfer is incomplete`);
}

rmSync(dest, { recursive: true, force: true });
mkdirSync(dest, { recursive: true });
for (const f of files) copyFileSync(join(modelDir, f), join(dest, f));
const { golden, ...rest } = metrics;
writeFileSync(join(dest, 'training-metrics.json'), `${JSON.stringify(rest, null, 1)}\n`);
if (golden) writeFileSync(join(dest, 'golden.json'), JSON.stringify(golden));
else console.warn(`install-checkpoint: warning: no golden fixture in the metrics (${metrics.golden_error ?? 'not written'})`);
copyFileSync(join(root, 'tools', 'demo-model', 'afd-model-info.json'), join(dest, 'afd-model-info.json'));
console.log(`install-checkpoint: installed ${dest} (${readdirSync(dest).join(', ')})`);
console.log('next:');
console.log(`  npm run build -w @afd/agent && node agent/dist/afd-bench.cjs demo-eval --model ${dest} --sample-repeats 5 --out ${join(dest, 'eval.json')}`);
console.log(`  node tools/demo-model/write-card.mjs --model ${dest}`);
