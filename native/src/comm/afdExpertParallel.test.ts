/**
 * Expert parallelism in one process over real loopback TCP: each FFN rank loads only its
 * routed experts (e -> floor(e * F / E)), the FFN ranks exchange token-expert pairs over
 * their mesh, and every sampled token and logit row equals the colocated engine's, for
 * 2A2F, 4A2F and 4A4F x DBO on/off x gate on either side (Qwen3-MoE), and for Mixtral,
 * DeepSeek-V2/V3 (grouped routing, shared experts on every FFN rank) and Qwen3-Next (Gated
 * DeltaNet state slots on the attention ranks, a gated shared expert on every FFN rank).
 * Role processes and faults: agent/src/afd/expertParallel.int.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expertRangeOf, resolveTopology, type StepResult } from '@afd/shared';
import { buildLoadSpec, ffnLoadByRank, roleLoadSpec } from '../checkpoint/loadSpec.js';
import { AttentionLink } from '../AttentionLink.js';
import { Engine } from '../engine.js';
import { FfnServer } from '../FfnServer.js';
import { roleSpec, writeTinyModel } from '../testing/engineTesting.js';
import { isMoeLayer, type ModelLoadSpec } from '../modelSpec.js';
import { afdEngineOpts as engineOpts, busyWork, runSteps, testRankConfig, withAfdTopology, type RankWork } from '../testing/afdTesting.js';
import { freePortBlock } from './ports.js';

interface Model {
  dir: string;
  colocated: Engine;
  numExperts: number;
  topK: number;
  moeLayers: boolean[];
  references: Map<number, Promise<StepResult[]>>;
}
const models = new Map<string, Model>();

beforeAll(async () => {
  for (const arch of ['qwen3_moe', 'mixtral', 'deepseek_v2', 'deepseek_v3', 'qwen3_next']) {
    const dir = await writeTinyModel(arch, 23);
    const spec = await roleSpec(dir, 'colocated');
    const colocated = await Engine.load(spec, engineOpts);
    const { numExperts, numExpertsPerTok: topK } = spec.config;
    models.set(arch, { dir, colocated, numExperts, topK, moeLayers: spec.config.layers.map(isMoeLayer), references: new Map() });
  }
});
afterAll(() => {
  for (const m of models.values()) m.colocated.close();
});

function ffnSpec(m: Model, gate: boolean, rank: number, numRanks: number): Promise<ModelLoadSpec> {
  return buildLoadSpec(m.dir, 'ffn', { computeGateOnAttention: gate, expertParallel: { rank, numRanks } }).then((r) => r.spec);
}

/** Real tokens the attention ranks send per step of their work (prefill, then one per sequence). */
function tokensSent(work: RankWork[], decodes: number): number {
  return work.reduce((sum, w) => sum + w.seqs.reduce((s, q) => s + q.length, 0) + decodes * w.seqs.length, 0);
}

const qwen = ['2A2F', '4A2F', '4A4F'].flatMap((topology) =>
  [false, true].flatMap((dbo) => [false, true].map((gate) => ({ arch: 'qwen3_moe', topology, dbo, gate }))),
);
const mixtral = [
  { arch: 'mixtral', topology: '2A2F', dbo: true, gate: false },
  { arch: 'mixtral', topology: '4A4F', dbo: false, gate: true },
];
// DeepSeek: grouped routing (V3: with the score correction bias on either side), shared
// experts replicated on every FFN rank, a dense first layer.
const deepseek = [
  { arch: 'deepseek_v2', topology: '2A2F', dbo: true, gate: false },
  { arch: 'deepseek_v3', topology: '2A2F', dbo: false, gate: true },
  { arch: 'deepseek_v3', topology: '4A2F', dbo: true, gate: false },
  { arch: 'deepseek_v3', topology: '4A4F', dbo: true, gate: true },
];

// Qwen3-Next: Gated DeltaNet layers (state slots) on the attention ranks, a dense layer,
// MoE with a gated shared expert on every FFN rank.
const hybrid = [
  { arch: 'qwen3_next', topology: '2A2F', dbo: true, gate: false },
  { arch: 'qwen3_next', topology: '2A2F', dbo: false, gate: true },
];

describe.each([...qwen, ...mixtral, ...deepseek, ...hybrid])('$arch $topology, DBO $dbo, gate on attention $gate, expert parallel', ({ arch, topology, dbo, gate }) => {
  it('tokens and logits equal the colocated engine; every FFN rank joins every exchange', { timeout: 90_000 }, async () => {
    const m = models.get(arch)!;
    const t = resolveTopology(topology);
    const [x, y] = [t.attention.ranks, t.ffn.ranks];
    const attnSpec = await roleSpec(m.dir, 'attention', gate);
    const attn = await Promise.all(Array.from({ length: x }, () => Engine.load(attnSpec, engineOpts)));
    const ffn = await Promise.all(Array.from({ length: y }, async (_, f) => Engine.load(await ffnSpec(m, gate, f, y), engineOpts)));
    const decodes = 3;
    await withAfdTopology(topology, attn, ffn, { enableExpertParallel: true }, async (servers) => {
      const work = busyWork(x, dbo);
      const got = await Promise.all(work.map((w) => runSteps(attn[w.a]!, w.seqs, w.blocks, w.stageSplit, decodes)));
      for (const [i, w] of work.entries()) {
        if (!m.references.has(w.a)) m.references.set(w.a, runSteps(m.colocated, w.seqs, w.blocks, w.seqs.length, decodes));
        const ref = await m.references.get(w.a)!;
        for (let s = 0; s < ref.length; s++) {
          expect(Array.from(got[i]![s]!.tokenIds), `rank ${w.a} step ${s}`).toEqual(Array.from(ref[s]!.tokenIds));
          expect(got[i]![s]!.logits, `rank ${w.a} step ${s} logits`).toEqual(ref[s]!.logits);
        }
      }
      // A rank whose block was idle may still be answering its peers' placeholders: wait until every loop is idle again.
      await expect.poll(() => ffn.every((e) => e.stats().ffnLoopState === 'waiting-control'), { timeout: 10_000 }).toBe(true);
      const stats = servers.map((s) => s.expertStats()!);
      // Each rank holds its placement's range; the group stepped in lockstep.
      stats.forEach((st, f) => {
        expect({ start: st.expertStart, end: st.expertEnd }).toEqual(expertRangeOf(f, m.numExperts, y));
        expect(st.numRanks).toBe(y);
      });
      // What the FFN role reports (FfnServer.rankStats): its weights, its experts and their exchange.
      servers.forEach((server, f) => {
        const { start, end } = expertRangeOf(f, m.numExperts, y);
        const r = server.rankStats();
        expect(r).toMatchObject({ role: 'ffn', rank: f, weightBytes: ffn[f]!.info.residentWeightBytes });
        expect(r.experts).toMatchObject({ numExperts: m.numExperts, expertStart: start, expertEnd: end, expertParallel: true, numFfnRanks: y });
        expect(r.experts!.dispatchBytes.sent).toEqual(stats[f]!.dispatchSentBytes);
      });
      const steps = stats[0]!.groupSteps;
      expect(steps).toBeGreaterThanOrEqual(decodes + 1);
      for (const st of stats) expect(st.groupSteps).toBe(steps);
      // Every real token was routed to top-k experts in every MoE layer (placeholders never).
      const routed = m.moeLayers.map((_, l) => stats.reduce((sum, st) => sum + st.tokensPerExpert[l]!.reduce((a, b) => a + b, 0), 0));
      expect(routed).toEqual(m.moeLayers.map((moe) => (moe ? tokensSent(work, decodes) * m.topK : 0)));
      // Pairs crossed between ranks (what one rank sent, the others received), only in MoE layers.
      m.moeLayers.forEach((moe, l) => {
        const sent = stats.reduce((s, st) => s + st.dispatchSentBytes[l]!, 0);
        expect(stats.reduce((s, st) => s + st.dispatchReceivedBytes[l]!, 0)).toBe(sent);
        expect(stats.reduce((s, st) => s + st.combineReceivedBytes[l]!, 0)).toBe(stats.reduce((s, st) => s + st.combineSentBytes[l]!, 0));
        if (moe) expect(sent).toBeGreaterThan(0);
        else expect(sent).toBe(0);
      });
    });
  });
});

describe('expert-parallel loading', () => {
  it.each([2, 3, 4])('each of %i FFN ranks maps about 1/F of the expert bytes and the engine holds what the report says', async (y) => {
    const m = models.get('qwen3_moe')!;
    const report = await ffnLoadByRank(m.dir, y, { expertParallel: true });
    const [whole] = await ffnLoadByRank(m.dir, 1, { expertParallel: false });
    const totalExpertBytes = whole!.expertBytes;
    const bytesPerExpert = totalExpertBytes / m.numExperts;
    expect(report.reduce((s, r) => s + r.expertBytes, 0)).toBe(totalExpertBytes);
    for (const r of report) {
      const held = r.experts.end - r.experts.start;
      expect(r.experts).toEqual(expertRangeOf(r.rank, m.numExperts, y));
      expect(r.expertBytes).toBe(held * bytesPerExpert);
      // "About 1/F": within one expert of an even split.
      expect(Math.abs(r.expertBytes - totalExpertBytes / y)).toBeLessThanOrEqual(bytesPerExpert);
      // Dense layers and the router stay whole on every rank.
      expect(r.residentBytes - r.expertBytes).toBe(whole!.residentBytes - whole!.expertBytes);
      const engine = await Engine.load(await ffnSpec(m, false, r.rank, y), engineOpts);
      try {
        expect(engine.info.residentWeightBytes).toBe(r.residentBytes);
      } finally {
        engine.close();
      }
    }
  });

  it('dummy weights: each FFN rank generates only its experts, and 2A2F equals colocated on them', { timeout: 60_000 }, async () => {
    const m = models.get('qwen3_moe')!;
    const expertOf = (name: string): number | undefined => {
      const hit = /\.experts\.(\d+)\./.exec(name);
      return hit ? Number(hit[1]) : undefined;
    };
    const whole = await roleLoadSpec(m.dir, 'ffn', { loadFormat: 'dummy' });
    const ranks = await Promise.all([0, 1].map((rank) => roleLoadSpec(m.dir, 'ffn', { loadFormat: 'dummy', expertParallel: { rank, numRanks: 2 } })));
    ranks.forEach((r, f) => {
      expect(r.spec.expertRange).toEqual(expertRangeOf(f, m.numExperts, 2));
      const held = new Set(r.spec.tensors.map((t) => expertOf(t.name)).filter((e) => e !== undefined));
      // The slot binding names the same expert as the checkpoint name.
      for (const t of r.spec.tensors) expect(t.expert).toBe(expertOf(t.name));
      expect([...held].sort()).toEqual(Array.from({ length: 3 }, (_, i) => 3 * f + i));
    });
    const expertBytes = (spec: ModelLoadSpec): number => spec.tensors.filter((t) => expertOf(t.name) !== undefined).reduce((a, t) => a + t.byteLength, 0);
    expect(expertBytes(ranks[0]!.spec) + expertBytes(ranks[1]!.spec)).toBe(expertBytes(whole.spec));
    const colocated = await Engine.load((await roleLoadSpec(m.dir, 'colocated', { loadFormat: 'dummy' })).spec, engineOpts);
    const attnSpec = (await roleLoadSpec(m.dir, 'attention', { loadFormat: 'dummy' })).spec;
    const attn = await Promise.all([0, 1].map(() => Engine.load(attnSpec, engineOpts)));
    const ffn = await Promise.all(ranks.map((r) => Engine.load(r.spec, engineOpts)));
    try {
      await withAfdTopology('2A2F', attn, ffn, { enableExpertParallel: true }, async () => {
        for (const w of busyWork(2, true)) {
          const got = await runSteps(attn[w.a]!, w.seqs, w.blocks, w.stageSplit, 2);
          const ref = await runSteps(colocated, w.seqs, w.blocks, w.seqs.length, 2);
          got.forEach((g, s) => expect(g.logits, `rank ${w.a} step ${s}`).toEqual(ref[s]!.logits));
        }
      });
    } finally {
      colocated.close();
    }
  });

  it('a group that never forms fails the rendezvous naming the missing FFN rank, and tells the joined attention rank', { timeout: 60_000 }, async () => {
    const m = models.get('qwen3_moe')!;
    const ffn = await Engine.load(await ffnSpec(m, false, 0, 2), engineOpts);
    const attn = await Engine.load(await roleSpec(m.dir, 'attention'), engineOpts);
    const basePort = await freePortBlock(4);
    const opts = { topology: '2A2F', port: basePort, rendezvousTimeoutMs: 1500, stepDeadlineMs: 2000, enableExpertParallel: true };
    const server = new FfnServer(ffn, testRankConfig('ffn', { ...opts, rank: 0 }));
    // The attention rank would wait far longer: it hears from its FFN rank first.
    const link = new AttentionLink(attn, testRankConfig('attention', { ...opts, rank: 0, rendezvousTimeoutMs: 30_000 }));
    try {
      const [served, joined] = await Promise.allSettled([server.start(), link.connect()]);
      expect(served.status === 'rejected' && String(served.reason)).toMatch(/for its expert-parallel group: FFN rank\(s\) 1 did not connect before the rendezvous timeout/);
      expect(joined.status === 'rejected' && String(joined.reason)).toMatch(/FFN rank\(s\) 1 did not connect/);
    } finally {
      await link.close({ shutdown: false });
      await server.stop();
      ffn.close();
      attn.close();
    }
  });

  it('refuses an expert range for a role that holds no experts', async () => {
    const m = models.get('qwen3_moe')!;
    await expect(buildLoadSpec(m.dir, 'attention', { expertParallel: { rank: 0, numRanks: 2 } })).rejects.toThrow('the attention role loads no expert range');
  });

  it('an FFN server refuses an engine loaded with another rank\'s experts', async () => {
    const m = models.get('qwen3_moe')!;
    const engine = await Engine.load(await ffnSpec(m, false, 1, 2), engineOpts);
    const basePort = await freePortBlock(4);
    try {
      expect(() => new FfnServer(engine, testRankConfig('ffn', { topology: '2A2F', rank: 0, port: basePort, enableExpertParallel: true }))).toThrow(
        /FFN rank 0 of 2 holds experts \[0, 3\) under expert parallelism but its engine loaded \[3, 6\)/,
      );
    } finally {
      engine.close();
    }
  });

  it('refuses the device exchange on a CPU engine and an unknown exchange, naming the option', async () => {
    const m = models.get('qwen3_moe')!;
    const engine = await Engine.load(await ffnSpec(m, false, 0, 2), engineOpts);
    const basePort = await freePortBlock(4);
    const base = { topology: '2A2F', rank: 0, port: basePort, enableExpertParallel: true };
    try {
      for (const epTransport of ['peer', 'nccl'] as const) {
        expect(() => new FfnServer(engine, testRankConfig('ffn', { ...base, epTransport }))).toThrow(
          new RegExp(`epTransport ${epTransport} moves device memory between the FFN ranks: load the FFN engine with --backend cuda \\(it runs on cpu\\)`),
        );
      }
      // The schema refuses an unknown exchange first; native's own guard names the field of a raw config.
      expect(() => testRankConfig('ffn', { ...base, epTransport: 'nvlink' as 'peer' })).toThrow(/afd\.epTransport: Invalid option: expected one of "auto"\|"tcp"\|"nccl"\|"peer"/);
      const raw = testRankConfig('ffn', base);
      expect(() => new FfnServer(engine, { ...raw, afd: { ...raw.afd, epTransport: 'nvlink' as 'peer' } })).toThrow(/config\.afd\.epTransport must be one of "auto", "tcp", "peer", "nccl" \(got "nvlink"\)/);
    } finally {
      engine.close();
    }
  });
});
