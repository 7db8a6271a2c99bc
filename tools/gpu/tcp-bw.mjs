// The loopback TCP link's bandwidth on this host (the floor of the prefill ranks' KV transfer
// when the ranks share a host): one connection, 4 MiB writes with backpressure, as the KV
// transfer writes; the best of three runs of --mib MiB. Node builtins only (runs on the GPU host).
//   node tcp-bw.mjs [--mib 2048] [--out tcp-bw.json]
import { createServer, connect } from 'node:net';
import { writeFileSync } from 'node:fs';
import { arg } from './cli-arg.mjs';

const mib = Number(arg('--mib', '2048'));
const out = arg('--out');
const chunk = Buffer.alloc(4 << 20, 7);

async function once() {
  const server = createServer((sock) => sock.on('data', () => undefined));
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  const sock = connect(server.address().port, '127.0.0.1');
  await new Promise((r) => sock.once('connect', r));
  const total = mib * 2 ** 20;
  const t0 = performance.now();
  for (let sent = 0; sent < total; sent += chunk.length) {
    if (!sock.write(chunk)) await new Promise((r) => sock.once('drain', r));
  }
  await new Promise((r) => sock.end(r));
  const s = (performance.now() - t0) / 1e3;
  server.close();
  return total / s;
}

const runs = [];
for (let i = 0; i < 3; i++) runs.push(await once());
const best = Math.max(...runs);
const result = { mib, bytesPerSecond: best, runsGBps: runs.map((b) => +(b / 1e9).toFixed(3)) };
console.log(`loopback TCP: ${(best / 1e9).toFixed(2)} GB/s (best of ${runs.map((b) => (b / 1e9).toFixed(2)).join(', ')})`);
if (out) writeFileSync(out, JSON.stringify(result, null, 2));
