// The summary of tools/gpu/mps-one-gpu.sh: a line per afd-bench serve JSON of the folder
// (mps-<run>-c<C>.json), then issue 37's targets against the colocated run of the same
// folder: 1A1F / colocated mean TPOT at c=1 and c=8 (<= 1.08), 1A1F (and 1A1F with DBO, if
// measured) / colocated output tok/s at c=64 (>= 1.0), 2A2F EP / colocated mean TPOT at c=8
// (<= 1.25); and each SM split's ratios, to pick the default. Node builtins only (runs on
// the GPU host).
//   node mps-summary.mjs <folder>
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

const dir = process.argv[2] ?? '.';
/** run name -> concurrency -> result */
const runs = new Map();
for (const f of readdirSync(dir).sort()) {
  const m = /^mps-(.+)-c(\d+)\.json$/.exec(f);
  if (!m) continue;
  const r = JSON.parse(readFileSync(join(dir, f), 'utf8'));
  if (!runs.has(m[1])) runs.set(m[1], new Map());
  runs.get(m[1]).set(Number(m[2]), r);
}
const n = (x, d = 2) => (x === null || x === undefined || !Number.isFinite(x) ? '-' : x.toFixed(d));
for (const [name, byC] of runs) {
  for (const [c, r] of [...byC].sort((a, b) => a[0] - b[0])) {
    console.log(`${name} c=${c}: ${r.completed} ok, ${r.failed} failed; mean TPOT ${n(r.tpotMs.mean)} ms (median ${n(r.tpotMs.median)}); output ${n(r.outputThroughput, 0)} tok/s`);
  }
}

const get = (name, c) => {
  const r = runs.get(name)?.get(c);
  return r && r.completed > 0 ? r : null;
};
const ratio = (name, c, pick) => {
  const a = get(name, c);
  const b = get('colocated', c);
  return a && b ? pick(a) / pick(b) : null;
};
const tpot = (r) => r.tpotMs.mean;
const tput = (r) => r.outputThroughput;
const say = (what, r, target, ok) => console.log(`${what}: ${n(r, 3)} (target ${target}: ${r === null ? 'not measured' : ok(r) ? 'met' : 'missed'})`);

console.log('-- issue 37 targets, against the colocated run of this folder');
say('1A1F / colocated, mean TPOT c=1', ratio('1a1f', 1, tpot), '<= 1.08', (r) => r <= 1.08);
say('1A1F / colocated, mean TPOT c=8', ratio('1a1f', 8, tpot), '<= 1.08', (r) => r <= 1.08);
say('1A1F / colocated, output tok/s c=64', ratio('1a1f', 64, tput), '>= 1.0', (r) => r >= 1.0);
say('1A1F + DBO / colocated, output tok/s c=64', ratio('1a1f-dbo', 64, tput), '>= 1.0', (r) => r >= 1.0);
say('2A2F EP / colocated, mean TPOT c=8', ratio('2a2f-ep', 8, tpot), '<= 1.25', (r) => r <= 1.25);
const splits = [...runs.keys()].filter((k) => /^1a1f-a\d+-f\d+$/.test(k));
if (splits.length > 0) {
  console.log('-- SM splits (attention/FFN percent of the SMs): TPOT ratio c=1, c=8; tok/s ratio c=64');
  for (const s of splits) console.log(`${s}: ${n(ratio(s, 1, tpot), 3)}, ${n(ratio(s, 8, tpot), 3)}; ${n(ratio(s, 64, tput), 3)}`);
}
const slice = get('slice', 1);
if (slice) console.log(`time-sliced 1A1F c=1 (what a user got without MPS): mean TPOT ${n(slice.tpotMs.mean)} ms, ${n(ratio('slice', 1, tpot), 1)}x colocated`);
