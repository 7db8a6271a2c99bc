// AFD role processes on two GPUs with the NCCL connector (run on the device machine by
// tools/gpu/afd-roles.sh): greedy completions of a colocated rank vs 1A1F and 2A1F
// topologies (attention ranks on GPU 0, the FFN rank on GPU 1, one NCCL communicator per
// attention-FFN pair), then the fault test: kill -9 the FFN process during a request; the
// attention rank must fail the request within the step deadline, say why, answer /health
// with 503 and stay alive. Node builtins only. Writes $OUT/afd-roles.json progressively.
//   node afd-roles.mjs --agent afd-agent.cjs --out DIR [--skip-dbo] [--backend cpu --connector tcp]
import { spawn } from 'node:child_process';
import { createWriteStream, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const args = process.argv.slice(2);
const arg = (name, dflt) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : dflt;
};
const agent = arg('--agent');
const out = arg('--out', '/tmp/afd-roles-out');
const stepDeadlineMs = 3000;
// --backend cpu --connector tcp: a dry run of this script on a machine without GPUs.
const backend = arg('--backend', 'cuda');
const connector = arg('--connector', 'nccl');
const report = { startedAt: new Date().toISOString(), backend, connector, stepDeadlineMs, runs: {}, checks: {}, fault: null, errors: [] };
const save = () => writeFileSync(join(out, 'afd-roles.json'), JSON.stringify(report, null, 2));
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const live = new Set();

class Role {
  constructor(name, role, flags, gpu) {
    this.name = name;
    this.events = [];
    this.waiters = [];
    this.t0 = Date.now();
    const log = createWriteStream(join(out, `${name}.log`));
    this.child = spawn(process.execPath, [agent, 'role', role, ...flags], {
      env: { ...process.env, CUDA_VISIBLE_DEVICES: String(gpu), NCCL_NVLS_ENABLE: '0' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    live.add(this);
    let buf = '';
    this.child.stdout.on('data', (d) => {
      log.write(d);
      buf += d.toString();
      let i;
      while ((i = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, i);
        buf = buf.slice(i + 1);
        try {
          this.events.push(JSON.parse(line));
        } catch {
          /* not an event line */
        }
        for (const w of this.waiters.splice(0)) w();
      }
    });
    this.child.stderr.on('data', (d) => log.write(d));
    this.exited = new Promise((res) => this.child.on('exit', (code, sig) => {
      live.delete(this);
      res(code ?? sig);
      for (const w of this.waiters.splice(0)) w();
    }));
    this.exitCode = undefined;
    this.exited.then((c) => (this.exitCode = c));
  }
  async waitFor(type, timeoutMs) {
    const end = Date.now() + timeoutMs;
    for (;;) {
      const e = this.events.find((x) => x.type === type);
      if (e) return e;
      const failed = this.events.find((x) => x.type === 'failed');
      if (failed) throw new Error(`${this.name} failed: ${failed.message}`);
      if (this.exitCode !== undefined) throw new Error(`${this.name} exited (${this.exitCode}) before "${type}"`);
      if (Date.now() > end) throw new Error(`${this.name}: no "${type}" within ${timeoutMs} ms`);
      await Promise.race([new Promise((r) => this.waiters.push(r)), sleep(250)]);
    }
  }
  url() {
    return this.events.find((e) => e.type === 'listening').apiUrl;
  }
  async stop(timeoutMs = 8000) {
    if (this.exitCode !== undefined) return this.exitCode;
    this.child.kill('SIGTERM');
    const code = await Promise.race([this.exited, sleep(timeoutMs).then(() => 'timeout')]);
    if (code === 'timeout') {
      this.child.kill('SIGKILL');
      return 'killed after timeout';
    }
    return code;
  }
}

const prompts = [
  'The quick brown fox',
  'Once upon a time in a land far away',
  'def fibonacci(n):',
  'AFD splits attention and FFN onto',
  'Paris is the capital of',
  '1, 2, 3, 4, 5,',
  'In the beginning',
  'The mitochondria is',
];

async function complete(url, prompt, maxTokens, timeoutMs = 60000) {
  const res = await fetch(`${url}/v1/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'tiny', prompt, max_tokens: maxTokens, temperature: 0, ignore_eos: true }),
    signal: AbortSignal.timeout(timeoutMs),
  });
  const body = await res.json().catch(() => null);
  if (res.status !== 200) return { status: res.status, error: body };
  return { status: 200, text: body.choices[0].text };
}

// Sequential (batch 1) and concurrent (batch 8) greedy completions.
async function workload(urls) {
  const seq = [];
  for (const p of prompts) seq.push((await complete(urls[0], p, 24)).text ?? null);
  const conc = await Promise.all(prompts.map((p, i) => complete(urls[i % urls.length], p, 24).then((r) => r.text ?? null)));
  return { sequential: seq, concurrent: conc };
}

function compare(name, got, ref) {
  const diff = (a, b) => a.map((x, i) => (x === b[i] ? null : i)).filter((i) => i !== null);
  const c = { sequentialMismatches: diff(got.sequential, ref.sequential), concurrentMismatches: diff(got.concurrent, ref.concurrent) };
  c.equal = c.sequentialMismatches.length === 0 && c.concurrentMismatches.length === 0;
  report.checks[name] = c;
  save();
}

async function stats(url) {
  return fetch(`${url}/afd/stats`).then((r) => r.json()).catch((e) => String(e));
}

const common = (port, topo, extraConfig = {}) => [
  '--backend', backend, '--api-port', '0', '--afd-port', String(port), '--topology', topo, '--served-model-name', 'tiny',
  '--connector', connector, '--config', JSON.stringify({ stepDeadlineMs, ...extraConfig }),
];

async function topology(name, topo, numAttn, port, extraConfig) {
  const t0 = Date.now();
  const ffn = new Role(`${name}-ffn`, 'ffn', common(port, topo, extraConfig), 1);
  await ffn.waitFor('listening', 60000);
  const attn = [];
  for (let r = 0; r < numAttn; r++) attn.push(new Role(`${name}-attn${r}`, 'attention', [...common(port, topo, extraConfig), '--rank', String(r)], 0));
  await Promise.all(attn.map((a) => a.waitFor('ready', 60000)));
  await ffn.waitFor('ready', 30000);
  const readyMs = Date.now() - t0;
  const w = await workload(attn.map((a) => a.url()));
  const run = { readyMs, ...w, attnStats: await stats(attn[0].url()), ffnStats: await stats(ffn.url()) };
  report.runs[name] = run;
  save();
  return { ffn, attn };
}

// Runs one phase; a failure is recorded and the phase's processes are killed, so the
// remaining phases still run.
async function phase(name, fn) {
  const before = new Set(live);
  try {
    await fn();
  } catch (e) {
    report.errors.push(`${name}: ${String(e?.stack ?? e)}`);
    for (const r of live) if (!before.has(r)) r.child.kill('SIGKILL');
    await sleep(500);
  }
  save();
}

async function main() {
  const base = 29600;
  // 1. colocated on GPU 0.
  await phase('colocated', async () => {
    const colo = new Role('colocated', 'colocated', ['--backend', backend, '--api-port', '0', '--served-model-name', 'tiny'], 0);
    await colo.waitFor('ready', 90000);
    report.runs.colocated = await workload([colo.url()]);
    save();
    report.runs.colocatedStop = await colo.stop();
  });
  if (!report.runs.colocated) report.runs.colocated = { sequential: [], concurrent: [] };
  await phase('1A1F+fault', () => oneAOneF(base));
  await phase('2A1F', () => twoAOneF(base + 10));
  if (!args.includes('--skip-dbo')) await phase('1A1F-dbo', () => dbo(base + 20));
}

async function oneAOneF(base) {
  // 2. 1A1F over NCCL; then the fault test on it.
  const a = await topology('1A1F', '1A1F', 1, base);
  compare('1A1F', report.runs['1A1F'], report.runs.colocated);
  const attnUrl = a.attn[0].url();
  const long = complete(attnUrl, 'A long story:', 20000, 60000).then((r) => ({ ...r, at: Date.now() }));
  await sleep(1500);
  const killedAt = Date.now();
  a.ffn.child.kill('SIGKILL');
  const r = await long;
  // /health turns 503 once the link watcher (250 ms poll) has seen the loss.
  let health = null;
  for (const end = Date.now() + 5000; Date.now() < end; await sleep(50)) {
    const res = await fetch(`${attnUrl}/health`).catch((e) => ({ status: String(e), text: async () => '' }));
    health = { status: res.status, body: await res.text(), afterKillMs: Date.now() - killedAt };
    if (res.status === 503) break;
  }
  const later = await complete(attnUrl, 'still there?', 4, 10000).catch((e) => ({ status: String(e) }));
  report.fault = {
    requestStatus: r.status,
    requestError: r.error,
    failedAfterKillMs: r.at - killedAt,
    attentionHealth: health,
    attentionAlive: a.attn[0].exitCode === undefined,
    nextRequest: later,
    ffnExit: a.ffn.exitCode ?? null,
  };
  save();
  report.runs['1A1F'].attnStop = await a.attn[0].stop();
  save();
}

async function twoAOneF(base) {
  // 3. 2A1F: both attention ranks on GPU 0, the FFN rank on GPU 1.
  const b = await topology('2A1F', '2A1F', 2, base);
  compare('2A1F', report.runs['2A1F'], report.runs.colocated);
  report.runs['2A1F'].stop = [await b.attn[0].stop(), await b.attn[1].stop(), await b.ffn.stop()];
  save();
}

async function dbo(base) {
  // 4. 1A1F with dual-batch overlap (two stages per step on one stream).
  const c = await topology('1A1F-dbo', '1A1F', 1, base, { dbo: { enabled: true, decodeTokenThreshold: 2, prefillTokenThreshold: 16 } });
  compare('1A1F-dbo', report.runs['1A1F-dbo'], report.runs.colocated);
  report.runs['1A1F-dbo'].stop = [await c.attn[0].stop(), await c.ffn.stop()];
  save();
}

const hardStop = setTimeout(() => {
  report.errors.push('hard timeout');
  finish(3);
}, Number(arg('--timeout-ms', '230000')));

function finish(code) {
  clearTimeout(hardStop);
  for (const r of live) r.child.kill('SIGKILL');
  report.finishedAt = new Date().toISOString();
  save();
  process.exit(code);
}

main().then(() => finish(0), (e) => {
  report.errors.push(String(e?.stack ?? e));
  finish(1);
});
