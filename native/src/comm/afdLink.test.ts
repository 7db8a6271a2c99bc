/**
 * The AFD runtime in one process: attention-role engines joined to an FFN server over
 * real loopback TCP (AttentionLink / FfnServer), compared with the colocated engine.
 * The multi-process version (real role processes) is agent/src/afd/*.int.test.ts.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { Engine } from '../engine.js';
import { buildStepPlan } from '../enginePlan.js';
import { generateGreedy, roleSpec, scatteredBlocks, writeTinyModel } from '../engineTesting.js';
import { loadAddon, type AfdLinkOptions, type NativeAttentionLink, type NativeFfnServer } from '../index.js';

const engineOpts = { threads: 1, kvBlockSize: 4, numKvBlocks: 31 };
const cleanup: (() => Promise<void> | void)[] = [];
afterAll(async () => {
  for (const f of cleanup.reverse()) await f();
});

async function load(dir: string, role: 'colocated' | 'attention' | 'ffn', gate = false): Promise<Engine> {
  const e = await Engine.load(await roleSpec(dir, role, gate), engineOpts);
  cleanup.push(() => e.close());
  return e;
}

function linkOptions(topology: string, rank: number, basePort: number): AfdLinkOptions {
  return { topology, rank, basePort, stepDeadlineMs: 3000, rendezvousTimeoutMs: 10_000 };
}

async function startFfn(engine: Engine, opts: AfdLinkOptions): Promise<{ server: NativeFfnServer; port: number }> {
  const server = new (loadAddon().FfnServer)(engine.nativeEngine, opts);
  cleanup.push(() => server.stop());
  const port = Number(server.state().listenAddress.split(':').at(-1));
  return { server, port };
}

function attention(engine: Engine, opts: AfdLinkOptions): NativeAttentionLink {
  const link = new (loadAddon().AttentionLink)(engine.nativeEngine, opts);
  cleanup.push(() => link.close({ shutdown: false }));
  return link;
}

describe.each([false, true])('AFD runtime in-process (gate on attention: %s)', (gate) => {
  it('1A1F: greedy tokens and logits equal the colocated engine', async () => {
    const dir = await writeTinyModel('qwen3_moe', 11);
    const colocated = await load(dir, 'colocated');
    const attn = await load(dir, 'attention', gate);
    const ffn = await load(dir, 'ffn', gate);
    const { server, port } = await startFfn(ffn, linkOptions('1A1F', 0, 0));
    const link = attention(attn, linkOptions('1A1F', 0, port));
    await Promise.all([server.start(), link.connect()]);
    expect(link.state().state).toBe('connected');
    expect(server.state()).toMatchObject({ state: 'serving', peersJoined: 1, blockSize: 1 });

    const prompt = [3, 17, 5, 9, 1, 30, 12];
    const blocks = scatteredBlocks(4, 1, 31);
    const ref = await generateGreedy(colocated, prompt, 6, { blocks });
    const got = await generateGreedy(attn, prompt, 6, { blocks });
    expect(got.tokens).toEqual(ref.tokens);
    for (let i = 0; i < ref.logits.length; i++) expect(got.logits[i]).toEqual(ref.logits[i]);

    const a = attn.stats();
    const f = ffn.stats();
    expect(a.a2fBytes.flat().reduce((x, y) => x + y, 0)).toBeGreaterThan(0);
    await expect.poll(() => ffn.stats().stepsServed).toBe(a.steps); // the FFN counts after its last send
    expect(f.ffnLoopState).toBe('waiting-control');
    expect(f.ffnComputeMs).toBeGreaterThan(0);
    await link.close({ shutdown: true });
    expect(await server.wait()).toMatch(/shutdown requested by attention rank 0/);
    expect(server.state().state).toBe('stopped');
  });

  it('3A2F: a DBO batch on one rank, an idle block peer joins with placeholder rows', async () => {
    const dir = await writeTinyModel('qwen3_moe', 12);
    const colocated = await load(dir, 'colocated');
    const attns = await Promise.all([0, 1, 2].map(() => load(dir, 'attention', gate)));
    const ffns = await Promise.all([0, 1].map(() => load(dir, 'ffn', gate)));
    // Ports: F0 on an ephemeral port is not allowed for 2 FFN ranks, so probe a free pair.
    const base = 20000 + Math.floor(Math.random() * 20000);
    const servers = await Promise.all(ffns.map((e, f) => startFfn(e, linkOptions('3A2F', f, base))));
    const links = attns.map((e, a) => attention(e, linkOptions('3A2F', a, base)));
    await Promise.all([...servers.map((s) => s.server.start()), ...links.map((l) => l.connect())]);

    const seqs = [
      { tokenIds: [4, 8, 15], numCached: 0, blockTable: [1, 2] },
      { tokenIds: [16, 23, 42 % 64, 7, 9], numCached: 0, blockTable: [3, 4] },
    ];
    const plan = buildStepPlan(seqs, { stageSplit: 1, returnLogits: true });
    const ref = await colocated.step(plan);
    const got = await attns[0]!.step(plan); // A1 (same block) is idle: called in by F0
    expect(Array.from(got.tokenIds)).toEqual(Array.from(ref.tokenIds));
    expect(got.logits).toEqual(ref.logits);
    const alone = await attns[2]!.step(buildStepPlan([seqs[0]!], { returnLogits: true }));
    const aloneRef = await colocated.step(buildStepPlan([{ ...seqs[0]!, blockTable: [5, 6] }], { returnLogits: true }));
    expect(alone.logits).toEqual(aloneRef.logits);
    // Counters move after the last send, so the peers may finish a moment after A0 returns.
    await expect.poll(() => links[1]!.state().emptySteps).toBe(1);
    await expect.poll(() => ffns[0]!.stats().stepsServed).toBe(1);
    await expect.poll(() => ffns[1]!.stats().stepsServed).toBe(1);
    for (const l of links) await l.close({ shutdown: true });
    for (const s of servers) expect(await s.server.wait()).toMatch(/shutdown requested/);
  });
});

describe('AFD runtime errors', () => {
  it('the FFN server refuses scheduler-style use, busy ports and wrong roles', async () => {
    const dir = await writeTinyModel('qwen3_moe', 13);
    const ffn = await load(dir, 'ffn');
    const attn = await load(dir, 'attention');
    const { server, port } = await startFfn(ffn, linkOptions('1A1F', 0, 0));
    expect(() => server.step()).toThrow(/connector-driven/);
    expect(() => new (loadAddon().FfnServer)(ffn.nativeEngine, linkOptions('1A1F', 0, port))).toThrow(/in use/);
    expect(() => new (loadAddon().FfnServer)(attn.nativeEngine, linkOptions('1A1F', 0, 0))).toThrow(/role ffn/);
    expect(() => new (loadAddon().AttentionLink)(ffn.nativeEngine, linkOptions('1A1F', 0, port))).toThrow(/role attention/);
    expect(() => new (loadAddon().AttentionLink)(attn.nativeEngine, linkOptions('1A2F', 0, port))).toThrow(/x >= y/);
    await expect(attn.step(buildStepPlan([{ tokenIds: [1], numCached: 0, blockTable: [0] }]))).rejects.toThrow(/no FFN executor/);
  });

  it('a lost FFN rank fails the step within the deadline, and the link reconnects when it returns', async () => {
    const dir = await writeTinyModel('qwen3_moe', 14);
    const attn = await load(dir, 'attention');
    const ffn = await load(dir, 'ffn');
    const first = await startFfn(ffn, { ...linkOptions('1A1F', 0, 0), stepDeadlineMs: 1000 });
    const link = attention(attn, { ...linkOptions('1A1F', 0, first.port), stepDeadlineMs: 1000 });
    await Promise.all([first.server.start(), link.connect()]);
    const plan = () => buildStepPlan([{ tokenIds: [1, 2], numCached: 0, blockTable: [0] }]);
    await attn.step(plan());
    await first.server.stop(); // peers see a goodbye
    const t0 = Date.now();
    await expect(attn.step(plan())).rejects.toThrow(/FFN rank 0 at 127\.0\.0\.1/);
    expect(Date.now() - t0).toBeLessThan(1500);
    await expect.poll(() => link.state().state).toBe('lost');
    // The FFN rank comes back on the same port: the watcher reconnects.
    const again = await startFfn(ffn, { ...linkOptions('1A1F', 0, first.port), stepDeadlineMs: 1000 });
    await again.server.start();
    await expect.poll(() => link.state().state, { timeout: 5000 }).toBe('connected');
    expect(link.state().reconnects).toBe(1);
    await attn.step(plan());
  });
});
