/**
 * The AFD runtime in one process: attention-role engines joined to an FFN server over
 * real loopback TCP (the AttentionLink / FfnServer wrappers over the real addon), compared
 * with the colocated engine.
 * The multi-process version (real role processes) is agent/src/afd/*.int.test.ts.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { buildStepPlan, resolveRankConfig, type AfdConfigInput, type RankConfig } from '@afd/shared';
import { loadAddon } from '../addon.js';
import { AttentionLink } from '../AttentionLink.js';
import { Engine, nativeEngineOf } from '../engine.js';
import { FfnServer } from '../FfnServer.js';
import { generateGreedy, roleSpec, scatteredBlocks, writeTinyModel } from '../testing/engineTesting.js';
import { freePortBlock } from './ports.js';

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

/** Bound of every poll for counters that move just after a step returns (a loaded 2-core CI box stalls threads for seconds). */
const settle = { timeout: 15_000 };

/** A rank config (the schema's defaults, short test deadlines); `afd` overrides its afd fields. */
function linkOptions(topology: string, rank: number, port: number, afd: AfdConfigInput = {}, role: 'attention' | 'ffn' = 'attention'): RankConfig {
  return resolveRankConfig({ afd: { role, topology, rank, port, stepDeadlineMs: 3000, rendezvousTimeoutMs: 10_000, ...afd } });
}

/** The same config as an FFN rank's. */
function asFfn(config: RankConfig): RankConfig {
  return resolveRankConfig({ ...config, afd: { ...config.afd, role: 'ffn' } });
}

async function startFfn(engine: Engine, config: RankConfig): Promise<{ server: FfnServer; port: number }> {
  const server = new FfnServer(engine, asFfn(config));
  cleanup.push(() => server.stop());
  return { server, port: server.listenPort() };
}

function attention(engine: Engine, config: RankConfig): AttentionLink {
  const link = new AttentionLink(engine, config);
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
    expect(a.a2fBytes.flat().reduce((x, y) => x + y, 0)).toBeGreaterThan(0);
    // Loopback: one kernel, one clock; each direction is timed by itself (step 0 is sampled).
    expect([a.wireBasisA2f, a.wireBasisF2a]).toEqual(['one-way', 'one-way']);
    expect(a.a2fWireUs.every((row) => row[0]! > 0) && a.f2aWireUs.every((row) => row[0]! > 0)).toBe(true);
    await expect.poll(() => ffn.stats().stepsServed, settle).toBe(a.steps); // the FFN counts after its last send
    expect([ffn.stats().wireBasisA2f, ffn.stats().wireBasisF2a]).toEqual(['one-way', 'one-way']);
    // ...and goes back to waiting for the next control payload a moment after counting.
    await expect.poll(() => ffn.stats().ffnLoopState, settle).toBe('waiting-control');
    expect(ffn.stats().ffnComputeMs).toBeGreaterThan(0);
    await link.close({ shutdown: true });
    expect(await server.wait()).toMatch(/shutdown requested by attention rank 0/);
    expect(server.state().state).toBe('stopped');
  });

  it('3A2F: a DBO batch on one rank, an idle block peer joins with placeholder rows', async () => {
    const dir = await writeTinyModel('qwen3_moe', 12);
    const colocated = await load(dir, 'colocated');
    const attns = await Promise.all([0, 1, 2].map(() => load(dir, 'attention', gate)));
    const ffns = await Promise.all([0, 1].map(() => load(dir, 'ffn', gate)));
    // Ports: F0 on an ephemeral port is not allowed for 2 FFN ranks, so take a free pair.
    const base = await freePortBlock(2);
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
    await expect.poll(() => links[1]!.state().emptySteps, settle).toBe(1);
    await expect.poll(() => ffns[0]!.stats().stepsServed, settle).toBe(1);
    await expect.poll(() => ffns[1]!.stats().stepsServed, settle).toBe(1);
    for (const l of links) await l.close({ shutdown: true });
    for (const s of servers) expect(await s.server.wait()).toMatch(/shutdown requested/);
  });
});

describe('AFD runtime block lockstep', () => {
  // The hub protocol under contention: a block peer steps alone, the other alone, or both
  // at once (their requests race the FFN rank's step call; the idle one is called in by
  // its watcher thread). Every block step must see every peer exactly once, and every
  // rank must get the colocated logits whatever joined its step.
  it('2A1F: 150 steps of solo, idle-joined and concurrent requests stay in lockstep', async () => {
    const dir = await writeTinyModel('qwen3_moe', 15);
    const colocated = await load(dir, 'colocated');
    const attns = await Promise.all([0, 1].map(() => load(dir, 'attention')));
    const ffn = await load(dir, 'ffn');
    const { server, port } = await startFfn(ffn, linkOptions('2A1F', 0, 0));
    const links = attns.map((e, a) => attention(e, linkOptions('2A1F', a, port)));
    await Promise.all([server.start(), ...links.map((l) => l.connect())]);

    const plan = () => buildStepPlan([{ tokenIds: [4, 8, 15], numCached: 0, blockTable: [1, 2] }], { returnLogits: true });
    const ref = await colocated.step(plan());
    const stepped = [0, 0];
    for (let i = 0; i < 150; i++) {
      const who = i % 3 === 2 ? [0, 1] : [i % 3];
      const got = await Promise.all(who.map((a) => attns[a]!.step(plan())));
      for (const g of got) expect(g.logits).toEqual(ref.logits);
      for (const a of who) stepped[a] = stepped[a]! + 1;
    }
    // Each block step holds one request of each peer: its own step or an empty one.
    const served = (): number => ffn.stats().stepsServed;
    await expect.poll(() => stepped[0]! + links[0]!.state().emptySteps - served(), settle).toBe(0);
    await expect.poll(() => stepped[1]! + links[1]!.state().emptySteps - served(), settle).toBe(0);
    expect(served()).toBeGreaterThanOrEqual(100);
    // Every solo step of one rank called the other in (at least 50 each way).
    for (const l of links) expect(l.state().emptySteps).toBeGreaterThanOrEqual(50);
    expect(links.map((l) => l.state().state)).toEqual(['connected', 'connected']);
    for (const l of links) await l.close({ shutdown: true });
    expect(await server.wait()).toMatch(/shutdown requested/);
  });
});

describe('AFD runtime rejoin', () => {
  // Rendezvous again and again: after each FFN restart both links redial, the block
  // restarts at step 0, and the first step (a warmup in a role) calls the idle peer in.
  it('2A1F: five FFN restarts, each followed at once by a step that joins the idle peer', { timeout: 120_000 }, async () => {
    const dir = await writeTinyModel('qwen3_moe', 16);
    const attns = await Promise.all([0, 1].map(() => load(dir, 'attention')));
    const ffn = await load(dir, 'ffn');
    const first = await startFfn(ffn, linkOptions('2A1F', 0, 0));
    const links = attns.map((e, a) => attention(e, linkOptions('2A1F', a, first.port)));
    await Promise.all([first.server.start(), ...links.map((l) => l.connect())]);
    const plan = () => buildStepPlan([{ tokenIds: [4, 8, 15], numCached: 0, blockTable: [1, 2] }], { returnLogits: true });
    const ref = await attns[0]!.step(plan());
    let server = first.server;
    for (let round = 1; round <= 5; round++) {
      await server.stop();
      await expect.poll(() => links.map((l) => l.state().state), settle).toEqual(['lost', 'lost']);
      const empty = links[1]!.state().emptySteps;
      server = (await startFfn(ffn, linkOptions('2A1F', 0, first.port))).server;
      await server.start();
      await expect.poll(() => links.map((l) => l.state().state), { timeout: 30_000 }).toEqual(['connected', 'connected']);
      expect((await attns[0]!.step(plan())).logits, `round ${round}`).toEqual(ref.logits);
      await expect.poll(() => links[1]!.state().emptySteps, settle).toBe(empty + 1);
      expect(links.map((l) => l.state().reconnects)).toEqual([round, round]);
    }
    for (const l of links) await l.close({ shutdown: true });
    expect(await server.wait()).toMatch(/shutdown requested/);
  });
});

describe('AFD runtime errors', () => {
  it('the FFN server refuses scheduler-style use, busy ports and wrong roles', async () => {
    const dir = await writeTinyModel('qwen3_moe', 13);
    const ffn = await load(dir, 'ffn');
    const attn = await load(dir, 'attention');
    const { port } = await startFfn(ffn, linkOptions('1A1F', 0, 0));
    // The raw server refuses scheduler-style use (the wrapper has no step at all).
    const raw = new (loadAddon().FfnServer)(nativeEngineOf(ffn), asFfn(linkOptions('1A1F', 0, 0)));
    expect(() => raw.step()).toThrow(/connector-driven/);
    await raw.stop();
    expect(() => new FfnServer(ffn, asFfn(linkOptions('1A1F', 0, port)))).toThrow(/in use/);
    expect(() => new FfnServer(attn, asFfn(linkOptions('1A1F', 0, 0)))).toThrow(/role ffn/);
    expect(() => new AttentionLink(ffn, linkOptions('1A1F', 0, port))).toThrow(/role attention/);
    // The topology comes resolved from TypeScript; the native side still refuses bad counts, naming the field.
    const valid = linkOptions('1A1F', 0, port);
    const topology = (attention: number, ffnRanks: number): RankConfig => ({ ...valid, afd: { ...valid.afd, topology: { name: 'x', attention: { ranks: attention, dp: attention, tp: 1 }, ffn: { ranks: ffnRanks, dp: ffnRanks, tp: 1 }, worldSize: 0 } } });
    expect(() => new AttentionLink(attn, topology(1, 2))).toThrow(/topology 1A2F: there must be at least as many attention ranks as FFN ranks \(x >= y\)/);
    expect(() => new AttentionLink(attn, topology(0, 1))).toThrow(/config\.afd\.topology\.attention\.ranks must be an integer in \[1, 1024\]/);
    expect(() => new AttentionLink(attn, { ...valid, afd: { ...valid.afd, topology: '2A1F' as never } })).toThrow(
      /config\.afd\.topology must be an object \(pass a rank config resolved by @afd\/shared's rankConfigSchema\)/,
    );
    await expect(attn.step(buildStepPlan([{ tokenIds: [1], numCached: 0, blockTable: [0] }]))).rejects.toThrow(/no FFN executor/);
    // Connectors nccl and peer move device memory: refused on these CPU engines, and unknown names are refused.
    for (const connector of ['nccl', 'peer'] as const) {
      const device = resolveRankConfig({ afd: { ...linkOptions('1A1F', 0, 0).afd, connector }, serving: { maxNumBatchedTokens: 4096 } });
      expect(() => new FfnServer(ffn, asFfn(device))).toThrow(new RegExp(`connector "${connector}" moves device memory.*--backend cuda`));
      expect(() => new AttentionLink(attn, device)).toThrow(/--backend cuda/);
    }
    // The schema refuses these first; native's last guard names the field of a raw config.
    const valid0 = asFfn(linkOptions('1A1F', 0, 0));
    const bogus = { ...valid0, afd: { ...valid0.afd, connector: 'ib' } } as unknown as RankConfig;
    expect(() => new FfnServer(ffn, bogus)).toThrow(/config\.afd\.connector must be one of "tcp", "nccl", "peer" \(got "ib"\)/);
    expect(() => new FfnServer(ffn, { ...valid0, serving: { ...valid0.serving, maxNumBatchedTokens: 0 } })).toThrow(/config\.serving\.maxNumBatchedTokens must be an integer/);
    expect(() => new FfnServer(ffn, { ...valid0, afd: undefined } as unknown as RankConfig)).toThrow(/config\.afd must be an object/);
  });

  it('the wrappers refuse a closed engine', async () => {
    const dir = await writeTinyModel('qwen3_moe', 17);
    const ffn = await load(dir, 'ffn');
    const attn = await load(dir, 'attention');
    ffn.close();
    attn.close();
    expect(() => new FfnServer(ffn, asFfn(linkOptions('1A1F', 0, 0)))).toThrow(/new FfnServer\(engine, config\): the Engine has no model loaded/);
    expect(() => new AttentionLink(attn, linkOptions('1A1F', 0, 1))).toThrow(/new AttentionLink\(engine, config\): the Engine has no model loaded/);
    expect(() => attn.stats()).toThrow(/Engine\.stats: the engine is closed/);
  });

  it('a lost FFN rank fails the step within the deadline, and the link reconnects when it returns', async () => {
    const dir = await writeTinyModel('qwen3_moe', 14);
    const attn = await load(dir, 'attention');
    const ffn = await load(dir, 'ffn');
    const first = await startFfn(ffn, linkOptions('1A1F', 0, 0, { stepDeadlineMs: 1000 }));
    const link = attention(attn, linkOptions('1A1F', 0, first.port, { stepDeadlineMs: 1000 }));
    await Promise.all([first.server.start(), link.connect()]);
    const plan = () => buildStepPlan([{ tokenIds: [1, 2], numCached: 0, blockTable: [0] }]);
    await attn.step(plan());
    await first.server.stop(); // peers see a goodbye
    const t0 = Date.now();
    await expect(attn.step(plan())).rejects.toThrow(/FFN rank 0 at 127\.0\.0\.1/);
    // The goodbye fails it at once; the bound only proves it never hangs (a loaded CI box
    // can stall this process for a second or two, so allow more than the 1 s deadline).
    expect(Date.now() - t0).toBeLessThan(5000);
    await expect.poll(() => link.state().state, settle).toBe('lost');
    // The FFN rank comes back on the same port: the watcher reconnects.
    const again = await startFfn(ffn, linkOptions('1A1F', 0, first.port, { stepDeadlineMs: 1000 }));
    await again.server.start();
    await expect.poll(() => link.state().state, { timeout: 30_000 }).toBe('connected'); // redial pauses 1 s between attempts
    expect(link.state().reconnects).toBe(1);
    await attn.step(plan());
  });
});
