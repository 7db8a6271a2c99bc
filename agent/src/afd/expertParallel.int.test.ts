/**
 * Expert parallelism with real role processes (CPU, built-in tiny model: 8 experts top-2):
 * each FFN rank loads only its experts (afd:experts_loaded, afd:weight_bytes on /metrics
 * agree with the load report), greedy completions equal the colocated run, /afd/stats
 * shows the exchange, and faults inside the FFN group (SIGKILL and SIGSTOP of one FFN
 * rank mid-generation) fail the in-flight step on every rank within the step deadline,
 * naming that rank, hang nothing, and the group recovers once the rank is back. The full
 * topology x DBO x gate matrix runs in-process in native/src/comm/afdExpertParallel.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { expertRangeOf, rankStatsSchema, resolveTopology } from '@afd/shared';
import { ffnLoadByRank, readModelConfig } from '@afd/native/checkpoint';
import { freePortBlock } from '@afd/native/ports';
import { complete, health } from '../testing/rankHttp.js';
import { until } from '../testing/until.js';
import { RoleProcess, stopTopology } from '../testing/RoleProcess.js';
import { useTinyModelSetup } from '../testing/tinyModelSetup.js';

const prompts = [
  [9707, 11, 1879, 0],
  [785, 3974, 13876, 38835],
];
const maxTokens = 5;
const setup = useTinyModelSetup({ homePrefix: 'afd-ep-int-', arch: 'qwen3_moe', reference: { prompts, maxTokens } });
const { home, model } = setup;
// The FFN group gives a silent peer half of this (ep/options.h).
const stepDeadlineMs = 4000;
/** Slack for a loaded 2-core CI box, where the HTTP error can take a few seconds to surface. */
const slackMs = 5000;

interface Topology {
  ffn: RoleProcess[];
  attn: RoleProcess[];
  attnUrls: string[];
  ffnUrls: string[];
  restartFfn(f: number): Promise<void>;
}

/** Starts every rank of `topology` with expert parallelism (FFN ranks last for half of them). */
async function launch(topology: string, extra: Record<string, unknown> = {}): Promise<Topology> {
  const t = resolveTopology(topology);
  const afdPort = await freePortBlock(2 * t.ffn.ranks); // FFN rank f also listens on port + y + f
  const config = { enableExpertParallel: true, stepDeadlineMs, ...extra };
  const startFfn = (rank: number): Promise<RoleProcess> => RoleProcess.start({ role: 'ffn', rank, topology, afdPort, model, home, config });
  const ffn: RoleProcess[] = [await startFfn(0)];
  const attn = await Promise.all(Array.from({ length: t.attention.ranks }, (_, a) => RoleProcess.start({ role: 'attention', rank: a, topology, afdPort, model, home, config })));
  for (let f = 1; f < t.ffn.ranks; f++) ffn.push(await startFfn(f));
  const attnUrls = await Promise.all(attn.map((p) => p.ready()));
  const ffnUrls = await Promise.all(ffn.map((p) => p.ready()));
  return {
    ffn,
    attn,
    attnUrls,
    ffnUrls,
    async restartFfn(f) {
      ffn[f] = await startFfn(f);
      ffnUrls[f] = await ffn[f]!.ready();
    },
  };
}

/** A generation far longer than any test waits for (3000 tokens fit the 16 MiB KV cache). */
function longGeneration(url: string): Promise<{ ok: boolean; atMs: number; message: string }> {
  return complete(url, [1, 2, 3, 4], 3000).then(
    () => ({ ok: true, atMs: Date.now(), message: '' }),
    (err: Error) => ({ ok: false, atMs: Date.now(), message: err.message }),
  );
}

/**
 * After a fault of FFN rank 1 at `faultAtMs`: every attention rank's long generation failed
 * within the step deadline, and every survivor says which FFN rank was lost: attention 0
 * (through its FFN rank 0), attention 1 (its own FFN rank), and FFN rank 0.
 */
async function expectFfnRank1Lost(t: Topology, longs: ReturnType<typeof longGeneration>[], faultAtMs: number): Promise<void> {
  for (const [a, outcome] of (await Promise.all(longs)).entries()) {
    expect(outcome.ok, `attention rank ${a}`).toBe(false);
    expect(outcome.atMs - faultAtMs, `attention rank ${a}`).toBeLessThan(stepDeadlineMs + slackMs);
  }
  for (const url of [...t.attnUrls, t.ffnUrls[0]!]) {
    await until(async () => (await health(url)).status === 503, `${url} /health 503`);
    expect((await health(url)).body.reason, url).toMatch(/FFN rank 1/);
  }
}

async function metric(url: string, name: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  if (!line) throw new Error(`${url}/metrics has no ${name}`);
  return Number(line.split(' ')[1]);
}

describe('expert parallelism with real role processes', () => {
  it('4A2F (DBO, gate on attention): each FFN rank holds 1/F of the experts, tokens equal colocated, metrics and stats show the split', { timeout: 240_000 }, async () => {
    const t = await launch('4A2F', { computeGateOnAttention: true, dbo: { enabled: true, decodeTokenThreshold: 2, prefillTokenThreshold: 2 } });
    // Two concurrent requests per prompt: batches of two (DBO splits them) and idle block peers.
    const jobs = prompts.flatMap((p, i) => [0, 1].map((k) => ({ prompt: p, i, rank: (2 * i + k) % 4 })));
    const results = await Promise.all(jobs.map((j) => complete(t.attnUrls[j.rank]!, j.prompt, maxTokens)));
    results.forEach((r, n) => expect(r.text, `prompt ${jobs[n]!.i} on attention rank ${jobs[n]!.rank}`).toBe(setup.reference[jobs[n]!.i]));

    const report = await ffnLoadByRank(model, 2, { expertParallel: true, computeGateOnAttention: true });
    const { numExperts } = await readModelConfig(model);
    for (const [f, url] of t.ffnUrls.entries()) {
      const range = expertRangeOf(f, numExperts, 2);
      expect(await metric(url, 'afd:experts_loaded')).toBe(range.end - range.start);
      expect(await metric(url, 'afd:weight_bytes')).toBe(report[f]!.residentBytes);
      const stats = rankStatsSchema.parse(await (await fetch(`${url}/afd/stats`)).json());
      expect(stats.experts).toMatchObject({ expertParallel: true, numFfnRanks: 2, expertStart: range.start, expertEnd: range.end, numExperts });
      const routed = stats.experts!.tokensPerExpert.flat().reduce((a, b) => a + b, 0);
      expect(routed).toBeGreaterThan(0);
      expect(stats.experts!.dispatchBytes.sent.some((b) => b > 0)).toBe(true);
    }
    await stopTopology(t.attn, t.ffn);
  });

  it('SIGKILL of one FFN rank mid-generation fails the step on every rank within the deadline, naming it; the group restarts', { timeout: 240_000 }, async () => {
    const t = await launch('2A2F');
    const longs = t.attnUrls.map((u) => longGeneration(u));
    await new Promise((r) => setTimeout(r, 1500)); // generation is under way on both blocks
    const killedAt = Date.now();
    await t.ffn[1]!.kill();
    await expectFfnRank1Lost(t, longs, killedAt);
    expect(t.ffn[0]!.alive && t.attn.every((p) => p.alive)).toBe(true);

    await t.restartFfn(1);
    await until(async () => (await Promise.all([...t.attnUrls, ...t.ffnUrls].map(health))).every((h) => h.status === 200), 'recovery', 30_000);
    const again = await Promise.all(t.attnUrls.map((u) => complete(u, prompts[0]!, maxTokens)));
    for (const r of again) expect(r.text).toBe(setup.reference[0]);
    await stopTopology(t.attn, t.ffn);
  });

  it('SIGSTOP of one FFN rank mid-generation fails the step on every rank within the deadline, naming it; it recovers after SIGCONT', { timeout: 240_000 }, async () => {
    const t = await launch('2A2F');
    const longs = t.attnUrls.map((u) => longGeneration(u));
    await new Promise((r) => setTimeout(r, 1500));
    const stoppedAt = Date.now();
    t.ffn[1]!.child.kill('SIGSTOP'); // no EOF, no RST: only the deadlines can tell
    try {
      await expectFfnRank1Lost(t, longs, stoppedAt);
    } finally {
      t.ffn[1]!.child.kill('SIGCONT');
    }
    await until(async () => (await Promise.all([...t.attnUrls, ...t.ffnUrls].map(health))).every((h) => h.status === 200), 'recovery after SIGCONT', 30_000);
    const again = await Promise.all(t.attnUrls.map((u) => complete(u, prompts[1]!, maxTokens)));
    for (const r of again) expect(r.text).toBe(setup.reference[1]);
    await stopTopology(t.attn, t.ffn);
  });
});
