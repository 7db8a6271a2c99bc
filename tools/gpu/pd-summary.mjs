// The summary of tools/gpu/pd-one-gpu.sh: a line per afd-bench serve JSON of the folder
// (pd-<run>-c<C>.json), then issue 41's comparison of each PD run against colocated at each
// concurrency (mean TPOT, mean TTFT, output tok/s), and the KV transfers the attention rank
// counted (bytes, time less the prefill rank's compute = the wire and queueing) as a rate
// against the host's loopback TCP bandwidth (tcp-bw.json). Node builtins only.
//   node pd-summary.mjs <folder>
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

const dir = process.argv[2] ?? '.';
const runs = new Map();
for (const f of readdirSync(dir).sort()) {
  const m = /^pd-(.+)-c(\d+)\.json$/.exec(f);
  if (!m) continue;
  if (!runs.has(m[1])) runs.set(m[1], new Map());
  runs.get(m[1]).set(Number(m[2]), JSON.parse(readFileSync(join(dir, f), 'utf8')));
}
const n = (x, d = 2) => (x === null || x === undefined || !Number.isFinite(x) ? '-' : x.toFixed(d));
for (const [name, byC] of runs) {
  for (const [c, r] of [...byC].sort((a, b) => a[0] - b[0])) {
    console.log(`${name} c=${c}: ${r.completed} ok, ${r.failed} failed; mean TPOT ${n(r.tpotMs.mean)} ms, mean TTFT ${n(r.ttftMs.mean)} ms (median ${n(r.ttftMs.median)}); output ${n(r.outputThroughput, 0)} tok/s`);
  }
}
for (const [name, byC] of runs) {
  if (name === 'colocated') continue;
  console.log(`-- ${name} / colocated (same GPU, same serving limits)`);
  for (const c of [...byC.keys()].sort((a, b) => a - b)) {
    const a = byC.get(c);
    const b = runs.get('colocated')?.get(c);
    if (!a || !b || !a.completed || !b.completed) continue;
    console.log(`c=${c}: TPOT ${n(a.tpotMs.mean / b.tpotMs.mean, 3)}, TTFT ${n(a.ttftMs.mean / b.ttftMs.mean, 3)}, output tok/s ${n(a.outputThroughput / b.outputThroughput, 3)}`);
  }
}
const bw = existsSync(join(dir, 'tcp-bw.json')) ? JSON.parse(readFileSync(join(dir, 'tcp-bw.json'), 'utf8')).bytesPerSecond : null;
for (const name of runs.keys()) {
  const statsFile = join(dir, `pd-${name}-stats-attention0.json`);
  if (name === 'colocated' || !existsSync(statsFile)) continue;
  const pd = JSON.parse(readFileSync(statsFile, 'utf8')).pd;
  for (const l of pd?.links ?? []) {
    const wireS = (l.transferMs - l.prefillMs) / 1e3;
    const rate = wireS > 0 ? l.bytes / wireS : null;
    const vsTcp = bw && rate && l.transport !== 'peer' ? ` = ${n(rate / bw, 3)} of loopback TCP (${n(bw / 1e9, 2)} GB/s)` : '';
    console.log(`${name}: KV link prefill ${l.prefillRank} -> attention 0 (${l.transport ?? 'tcp'}): ${l.transfers} transfers, ${n(l.bytes / 2 ** 30, 2)} GiB; mean ${n(l.transferMs / Math.max(1, l.transfers), 1)} ms per prompt of which the prefill rank computed ${n(l.prefillMs / Math.max(1, l.transfers), 1)} ms; rate over the rest ${rate ? n(rate / 1e9, 2) : '-'} GB/s${vsTcp}; last ${n(l.lastBytesPerSecond / 1e9, 2)} GB/s; lost ${l.lost}`);
  }
  console.log(`${name}: local prefills: ${JSON.stringify(pd?.localPrefills ?? {})}`);
}
