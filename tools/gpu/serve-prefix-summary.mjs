// The summary of tools/gpu/serve-prefix.sh: a line per afd-bench serve JSON of the folder
// (serve-<on|off>-<run>.json; runs mt-r<k> and random-r<k> enter the ratios, warm-* do not), then issue 36's targets from the launch with prefix caching on
// against the one with it off: multi-turn TTFT of turns >= 2 (a hit) on / off (target <= 0.2),
// multi-turn output tok/s on / off (>= 1.5), and on the random dataset (no reuse) output tok/s
// and mean TPOT and TTFT on vs off (<= 2% slower). Node builtins only (runs on the GPU host).
//   node serve-prefix-summary.mjs <folder>
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

const dir = process.argv[2] ?? '.';
const runs = new Map();
for (const f of readdirSync(dir).sort()) {
  const m = /^serve-(on|off)-(.+)\.json$/.exec(f);
  if (m) runs.set(`${m[1]}-${m[2]}`, JSON.parse(readFileSync(join(dir, f), 'utf8')));
}
const n = (x, d = 1) => (x === null || x === undefined ? '-' : x.toFixed(d));
const ttft = (s) => `${n(s.mean)}/${n(s.median)}/${n(s.percentiles.p99)}`;
for (const [name, r] of runs) {
  let line = `${name}: ${r.completed} ok, ${r.failed} failed; output ${n(r.outputThroughput)} tok/s; TTFT mean/median/p99 ${ttft(r.ttftMs)} ms; mean TPOT ${n(r.tpotMs.mean, 2)} ms; hit ratio ${n(r.cacheHitRatio, 3)}`;
  const m = r.multiTurn;
  if (m) line += `; turn 1 TTFT ${ttft(m.firstTurn.ttftMs)} ms (hit ${n(m.firstTurn.hitRatio, 3)}); turns >= 2 TTFT ${ttft(m.laterTurns.ttftMs)} ms (hit ${n(m.laterTurns.hitRatio, 3)})`;
  console.log(line);
}

/** Mean of a field over the runs of a mode whose name starts with `prefix` (repeats r1, r2 ...). */
function meanOf(mode, prefix, pick) {
  const xs = [...runs].filter(([k, r]) => k.startsWith(`${mode}-${prefix}`) && r.completed > 0).map(([, r]) => pick(r));
  return xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : null;
}
const ratio = (on, off) => (on === null || off === null ? null : on / off);
const say = (what, r, target, ok) => console.log(`${what}: ${n(r, 3)} (target ${target}: ${r === null ? 'not measured' : ok(r) ? 'met' : 'missed'})`);

const mtTtft = ratio(meanOf('on', 'mt', (r) => r.multiTurn.laterTurns.ttftMs.mean), meanOf('off', 'mt', (r) => r.multiTurn.laterTurns.ttftMs.mean));
const mtMedianTtft = ratio(meanOf('on', 'mt', (r) => r.multiTurn.laterTurns.ttftMs.median), meanOf('off', 'mt', (r) => r.multiTurn.laterTurns.ttftMs.median));
const mtTput = ratio(meanOf('on', 'mt', (r) => r.outputThroughput), meanOf('off', 'mt', (r) => r.outputThroughput));
const rdTput = ratio(meanOf('on', 'random', (r) => r.outputThroughput), meanOf('off', 'random', (r) => r.outputThroughput));
const rdTpot = ratio(meanOf('on', 'random', (r) => r.tpotMs.mean), meanOf('off', 'random', (r) => r.tpotMs.mean));
const rdTtft = ratio(meanOf('on', 'random', (r) => r.ttftMs.mean), meanOf('off', 'random', (r) => r.ttftMs.mean));
console.log('-- prefix caching on / off (issue 36 targets)');
say('multi-turn c=16, mean TTFT of turns >= 2, on/off', mtTtft, '<= 0.2', (r) => r <= 0.2);
say('multi-turn c=16, median TTFT of turns >= 2, on/off', mtMedianTtft, '<= 0.2', (r) => r <= 0.2);
say('multi-turn c=16, output tok/s, on/off', mtTput, '>= 1.5', (r) => r >= 1.5);
say('random c=64 (no reuse), output tok/s, on/off', rdTput, '>= 0.98', (r) => r >= 0.98);
say('random c=64 (no reuse), mean TPOT, on/off', rdTpot, '<= 1.02', (r) => r <= 1.02);
say('random c=64 (no reuse), mean TTFT, on/off', rdTtft, '<= 1.02', (r) => r <= 1.02);
if ([mtTtft, mtTput, rdTput].includes(null)) console.log("(a ratio needs both launches' runs in one folder: AFD_PREFIX_MODES=on,off, or the two calls' files copied together)");
