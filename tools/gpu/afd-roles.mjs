// AFD role processes on two GPUs with a device connector (--connector nccl, the default, or
// peer: CUDA IPC peer memory; run on the device machine by
// tools/gpu/afd-roles.sh or afd-all.sh): greedy completions of a colocated rank vs 1A1F
// (graphs on, graphs off, gate on attention, DBO) and 2A1F (attention ranks on GPU 0, the
// FFN rank on GPU 1, one NCCL communicator per attention-FFN pair), then two fault cases:
// kill -9 the FFN process during one long request (batch 1), and during 8 long requests
// (batch 8), and during 8 requests with the FFN pausing 20 ms before each layer (so the kill
// lands inside the attention rank's layer loop, where a device-plane wait must notice the
// closed connection instead of waiting out the deadline). The
// attention rank must fail every request within the step deadline + 3 s, say why, answer
// /health with 503, stay alive, and stop cleanly (exit 0) on SIGTERM. Node builtins only.
// Writes $OUT/afd-roles.json progressively; `passed` sums it up.
//   node afd-roles.mjs --agent afd-agent.cjs --out DIR [--skip-dbo] [--only a,b] [--connector nccl|peer]
//     [--gpu-visibility pinned|shared] [--backend cpu --connector tcp]
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
if (!['tcp', 'nccl', 'peer'].includes(connector)) throw new Error(`--connector must be tcp, nccl or peer (got "${connector}")`);
// Device connectors wait for the FFN output on the GPU (NCCL recv, peer-memory flag).
const deviceConnector = connector !== 'tcp';
// pinned: each role sees only its GPU (CUDA_VISIBLE_DEVICES=N), as the agent's launcher
// does for nccl; shared: each role sees both GPUs, its own first (CUDA_VISIBLE_DEVICES=N,M),
// so CUDA IPC can map the other process's memory (the launcher's choice for peer). Either
// way the role runs on its device 0.
const gpuVisibility = arg('--gpu-visibility', connector === 'peer' ? 'shared' : 'pinned');
if (!['pinned', 'shared'].includes(gpuVisibility)) throw new Error(`--gpu-visibility must be pinned or shared (got "${gpuVisibility}")`);
const report = { startedAt: new Date().toISOString(), backend, connector, gpuVisibility, stepDeadlineMs, runs: {}, checks: {}, fault: null, faults: {}, errors: [] };
const save = () => writeFileSync(join(out, 'afd-roles.json'), JSON.stringify(report, null, 2));
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const live = new Set();

class Role {
  constructor(name, role, flags, gpu, extraEnv = {}) {
    this.name = name;
    this.events = [];
    this.waiters = [];
    this.t0 = Date.now();
    const log = createWriteStream(join(out, `${name}.log`));
    const visible = gpuVisibility === 'pinned' || backend !== 'cuda' ? String(gpu) : `${gpu},${1 - gpu}`;
    this.child = spawn(process.execPath, [agent, 'role', role, ...flags], {
      env: { ...process.env, ...extraEnv, CUDA_VISIBLE_DEVICES: visible, NCCL_NVLS_ENABLE: '0' },
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

// Which phases run (--only colocated,1A1F,...; default all).
const only = arg('--only') ? new Set(arg('--only').split(',')) : null;
const wanted = (name) => !only || only.has(name);

async function main() {
  const base = 29600;
  // 1. colocated on GPU 0: the reference texts.
  await phase('colocated', async () => {
    const colo = new Role('colocated', 'colocated', ['--backend', backend, '--api-port', '0', '--served-model-name', 'tiny'], 0);
    await colo.waitFor('ready', 90000);
    report.runs.colocated = await workload([colo.url()]);
    save();
    report.runs.colocatedStop = await colo.stop();
  });
  if (!report.runs.colocated) report.runs.colocated = { sequential: [], concurrent: [] };
  // 2. 1A1F variants, each vs colocated. Graphs: the attention role's cudaGraph policy
  // (decode-only by default) drives the FFN role's graphs through the control flags.
  const variants = [
    ['1A1F', {}],
    ['1A1F-graphs-off', { cudaGraph: { policy: 'off' } }],
    ['1A1F-gate-attention', { computeGateOnAttention: true }],
  ];
  if (!args.includes('--skip-dbo')) variants.push(['1A1F-dbo', { dbo: { enabled: true, decodeTokenThreshold: 2, prefillTokenThreshold: 16 } }]);
  let port = base;
  for (const [name, config] of variants) {
    port += 10;
    if (wanted(name)) await phase(name, () => oneAOneF(name, port, config));
  }
  if (wanted('2A1F')) await phase('2A1F', () => twoAOneF(base + 60));
  // 3. Faults: kill -9 of the FFN rank during 1 and during 8 long requests.
  if (wanted('fault-batch1')) await phase('fault-batch1', () => fault('fault-batch1', base + 70, 1));
  if (wanted('fault-batch8')) await phase('fault-batch8', () => fault('fault-batch8', base + 80, 8));
  // The FFN rank pauses 20 ms on the host before each layer (the fault-test override
  // AFD_FAULT_FFN_LAYER_DELAY_US; eager FFN steps only, so its own cudaGraph policy is off),
  // so the kill lands while the attention rank waits inside its layer loop: the
  // device-plane wait must see the FFN's closed connection and fail the step well before
  // the deadline (not by the deadline + NCCL abort).
  if (wanted('fault-layer-loop')) {
    await phase('fault-layer-loop', () =>
      fault('fault-layer-loop', base + 90, 8, { env: { AFD_FAULT_FFN_LAYER_DELAY_US: '20000' }, config: { cudaGraph: { policy: 'off' } } }, true));
  }
}

async function oneAOneF(name, port, config) {
  const a = await topology(name, '1A1F', 1, port, config);
  compare(name, report.runs[name], report.runs.colocated);
  const g = report.runs[name].ffnStats?.graph;
  if (g) report.checks[name].ffnGraph = g;
  // Graphs on (the default decode-only policy) on CUDA: the FFN rank must have captured
  // its step and replayed it (the texts above then prove the replays compute right).
  if (name === '1A1F' && backend === 'cuda') {
    // With graphs on, the attention rank still times the wire on an eager step now and then
    // (runtime/engine/graph-step.cc): its per-layer A->F and F->A wire times must not all be zero.
    const attn = report.runs[name].attnStats;
    const timed = (rows) => (rows ?? []).some((row) => row.some((us) => us > 0));
    const wireSampled = timed(attn?.a2fWireUs) && timed(attn?.f2aWireUs);
    report.checks['1A1F-ffn-graphs'] = { equal: (g?.captures ?? 0) > 0 && (g?.hits ?? 0) > 0 && wireSampled, wireSampled, ffnGraph: g ?? null, attnGraph: attn?.graph ?? null };
  }
  report.runs[name].stop = [await a.attn[0].stop(), await a.ffn.stop()];
  save();
}

async function twoAOneF(port) {
  // Both attention ranks on GPU 0, the FFN rank on GPU 1.
  const b = await topology('2A1F', '2A1F', 2, port);
  compare('2A1F', report.runs['2A1F'], report.runs.colocated);
  report.runs['2A1F'].stop = [await b.attn[0].stop(), await b.attn[1].stop(), await b.ffn.stop()];
  save();
}

// ffnExtra: environment and config added to the FFN rank only.
async function fault(name, port, batch, ffnExtra = { env: {}, config: {} }, inLayerLoop = false) {
  const t0 = Date.now();
  const ffn = new Role(`${name}-ffn`, 'ffn', common(port, '1A1F', ffnExtra.config), 1, ffnExtra.env);
  await ffn.waitFor('listening', 60000);
  const attn = new Role(`${name}-attn0`, 'attention', [...common(port, '1A1F'), '--rank', '0'], 0);
  await attn.waitFor('ready', 60000);
  await ffn.waitFor('ready', 30000);
  const url = attn.url();
  const boundMs = stepDeadlineMs + 3000;
  const timeoutMs = 60000;
  const requests = Array.from({ length: batch }, (_, i) =>
    complete(url, `A long story number ${i}:`, 20000, timeoutMs)
      .catch((e) => ({ status: String(e) }))
      .then((r) => ({ ...r, at: Date.now() })),
  );
  await sleep(1500);
  let servedBeforeKill = (await stats(ffn.url()))?.steps ?? null;
  let ffnStateAtKill = null;
  if (inLayerLoop) {
    // Kill while the FFN rank reports being inside a step's layer loop (its host pause
    // before each layer makes that ~99% of its time), not between steps.
    for (const end = Date.now() + 3000; Date.now() < end; ) {
      const st = await stats(ffn.url());
      ffnStateAtKill = st?.ffnLoop ?? null;
      servedBeforeKill = st?.steps ?? servedBeforeKill;
      if (ffnStateAtKill && ffnStateAtKill.state !== 'waiting-control' && ffnStateAtKill.state !== 'idle') break;
    }
  }
  const killedAt = Date.now();
  ffn.child.kill('SIGKILL');
  const results = await Promise.all(requests);
  let health = null;
  for (const end = Date.now() + 5000; Date.now() < end; await sleep(50)) {
    const res = await fetch(`${url}/health`).catch((e) => ({ status: String(e), text: async () => '' }));
    health = { status: res.status, body: await res.text(), afterKillMs: Date.now() - killedAt };
    if (res.status === 503) break;
  }
  const later = await complete(url, 'still there?', 4, 10000).catch((e) => ({ status: String(e) }));
  const failedAfterKillMs = results.map((r) => r.at - killedAt);
  const errors = results.map((r) => JSON.stringify(r.error ?? r.status));
  // Where the kill landed, from the attention rank's error: the device-plane wait in the
  // layer loop (deadline / abort / NCCL / peer memory) or the TCP control plane between steps (step-go).
  const landed = errors.map((e) => (/NCCL|deadline|data plane|abort|peer-memory/i.test(e) ? 'layer-loop' : /step|announcement|Connection/i.test(e) ? 'control-plane' : 'unknown'));
  const aliveBeforeStop = attn.exitCode === undefined;
  const stopCode = await attn.stop(10000);
  const f = {
    batch,
    startedInMs: killedAt - t0,
    ffnStepsServedBeforeKill: servedBeforeKill,
    ffnStateAtKill,
    requestStatuses: results.map((r) => r.status),
    failedAfterKillMs,
    boundMs,
    errors,
    landed,
    attentionHealth: health,
    attentionAlive: aliveBeforeStop,
    nextRequest: later,
    attentionStop: stopCode,
  };
  // In the layer loop, the closed connection (not the deadline) must end the wait: well
  // under the step deadline. Only checked where a device plane waits (connector nccl or peer).
  const layerLoopOk = !inLayerLoop || !deviceConnector || (landed.every((l) => l === 'layer-loop') && failedAfterKillMs.every((ms) => ms < stepDeadlineMs));
  f.inLayerLoopRequired = inLayerLoop && deviceConnector;
  f.passed =
    layerLoopOk &&
    results.every((r) => r.status !== 200) &&
    failedAfterKillMs.every((ms) => ms <= boundMs) &&
    health?.status === 503 &&
    aliveBeforeStop &&
    stopCode === 0;
  report.faults[name] = f;
  if (batch === 1) report.fault = f;  // the field earlier reports used
  save();
}

function summarize() {
  const checks = Object.entries(report.checks).map(([k, c]) => [k, c.equal]);
  const faults = Object.entries(report.faults).map(([k, f]) => [k, f.passed]);
  report.passed = report.errors.length === 0 && [...checks, ...faults].every(([, ok]) => ok) && checks.length > 0;
  report.summary = Object.fromEntries([...checks, ...faults]);
}

const hardStop = setTimeout(() => {
  report.errors.push('hard timeout');
  finish(3);
}, Number(arg('--timeout-ms', '300000')));

function finish(code) {
  clearTimeout(hardStop);
  for (const r of live) r.child.kill('SIGKILL');
  report.finishedAt = new Date().toISOString();
  summarize();
  save();
  process.exit(code);
}

main().then(() => {
  summarize();
  finish(report.passed ? 0 : 2);
}, (e) => {
  report.errors.push(String(e?.stack ?? e));
  finish(1);
});
