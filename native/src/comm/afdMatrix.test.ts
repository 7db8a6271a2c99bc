/**
 * Every topology x DBO on/off x gate placement, in one process over real loopback TCP:
 * x attention-role engines (AttentionLink) and y FFN-role engines (FfnServer). Busy ranks
 * step concurrently (some with two DBO stages, a block mate with one), idle block peers
 * are called into each step, and every sampled token and logit row equals the colocated
 * engine's. Role processes: agent/src/afd/topologies.int.test.ts (and deepseek.int.test.ts).
 * The DeepSeek-V3 tiny model (MLA latent cache, a dense layer, shared experts, grouped
 * routing with the score bias on either side) runs 1A1F, 2A2F and 3A2F the same way.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ffnRankOf, resolveTopology, type StepResult } from '@afd/shared';
import { Engine } from '../engine.js';
import { buildStepPlan, type PlanSeq } from '../enginePlan.js';
import { roleSpec, writeTinyModel } from '../engineTesting.js';
import { loadAddon, type NativeAttentionLink, type NativeFfnServer } from '../index.js';
import type { ModelLoadSpec } from '../modelSpec.js';
import { freePortBlock } from './ports.js';

const engineOpts = { threads: 1, kvBlockSize: 4, numKvBlocks: 64 };
const models = [
  { arch: 'qwen3_moe', topologies: ['1A1F', '2A1F', '2A2F', '3A2F', '4A2F', '4A4F'] },
  { arch: 'deepseek_v3', topologies: ['1A1F', '2A2F', '3A2F'] },
];
const dirs = new Map<string, string>();
const colocated = new Map<string, Engine>();
/** Load specs by model, role and gate placement; promises, so concurrent loads share one. */
const specs = new Map<string, Promise<ModelLoadSpec>>();
/** The colocated engine's steps for attention rank a's work of a model (the same in every combination). */
const references = new Map<string, Promise<StepResult[]>>();

beforeAll(async () => {
  for (const { arch } of models) {
    dirs.set(arch, await writeTinyModel(arch, 21));
    colocated.set(arch, await Engine.load(await roleSpec(dirs.get(arch)!, 'colocated'), engineOpts));
  }
});
afterAll(() => colocated.forEach((e) => e.close()));

function spec(arch: string, role: 'attention' | 'ffn', gate: boolean): Promise<ModelLoadSpec> {
  const key = `${arch}-${role}-${gate}`;
  if (!specs.has(key)) specs.set(key, roleSpec(dirs.get(arch)!, role, gate));
  return specs.get(key)!;
}

/** Prefill of two sequences, then `decodes` greedy decode steps; returns every step's result. */
async function run(engine: Engine, seqs: number[][], blocks: number[][], stageSplit: number, decodes: number): Promise<StepResult[]> {
  const out: StepResult[] = [];
  const cached = seqs.map(() => 0);
  let next = seqs.map((s) => s);
  for (let step = 0; step <= decodes; step++) {
    const plan: PlanSeq[] = next.map((ids, i) => ({ tokenIds: ids, numCached: cached[i]!, blockTable: blocks[i]! }));
    const r = await engine.step(buildStepPlan(plan, { stageSplit: Math.min(stageSplit, seqs.length), returnLogits: true }));
    out.push(r);
    next.forEach((ids, i) => (cached[i]! += ids.length));
    next = next.map((_, i) => [r.tokenIds[i]!]);
  }
  return out;
}

const combos = models.flatMap(({ arch, topologies }) =>
  topologies.flatMap((topology) => [false, true].flatMap((dbo) => [false, true].map((gate) => ({ arch, topology, dbo, gate })))),
);

describe.each(combos)('$arch $topology, DBO $dbo, gate on attention $gate', ({ arch, topology, dbo, gate }) => {
  it('tokens and logits equal the colocated engine', { timeout: 60_000 }, async () => {
    const [x, y] = topology.match(/\d+/g)!.map(Number) as [number, number];
    const addon = loadAddon();
    const attn = await Promise.all(Array.from({ length: x }, async () => Engine.load(await spec(arch, 'attention', gate), engineOpts)));
    const ffn = await Promise.all(Array.from({ length: y }, async () => Engine.load(await spec(arch, 'ffn', gate), engineOpts)));
    const base = await freePortBlock(y);
    const opts = (rank: number) => ({ topology, rank, basePort: base, stepDeadlineMs: 10_000, rendezvousTimeoutMs: 20_000 });
    const servers: NativeFfnServer[] = ffn.map((e, f) => new addon.FfnServer(e.nativeEngine, opts(f)));
    const links: NativeAttentionLink[] = attn.map((e, a) => new addon.AttentionLink(e.nativeEngine, opts(a)));
    try {
      await Promise.all([...servers.map((s) => s.start()), ...links.map((l) => l.connect())]);
      // Even ranks run two sequences (two DBO stages when dbo), rank 1 runs one (one
      // stage next to its block mate's two); the others stay idle and are called in.
      const busy = Array.from({ length: x }, (_, a) => a).filter((a) => a % 2 === 0 || a === 1);
      const work = busy.map((a) => {
        const seqs = a === 1 ? [[7, 3, 9 + a]] : [[5 + a, 11, 2, 8], [1, 4 + a, 6]];
        const blocks = seqs.map((_, i) => [2 * i + 10 * a + 1, 2 * i + 10 * a + 2]);
        return { a, seqs, blocks, stageSplit: dbo ? 1 : 2 };
      });
      const got = await Promise.all(work.map((w) => run(attn[w.a]!, w.seqs, w.blocks, w.stageSplit, 3)));
      for (const [i, w] of work.entries()) {
        const key = `${arch}-${w.a}`;
        if (!references.has(key)) references.set(key, run(colocated.get(arch)!, w.seqs, w.blocks, w.seqs.length, 3));
        const ref = await references.get(key)!;
        for (let s = 0; s < ref.length; s++) {
          expect(Array.from(got[i]![s]!.tokenIds), `rank ${w.a} step ${s}`).toEqual(Array.from(ref[s]!.tokenIds));
          expect(got[i]![s]!.logits, `rank ${w.a} step ${s} logits`).toEqual(ref[s]!.logits);
        }
      }
      // Idle ranks that share a block with a busy rank were called into its steps.
      const topo = resolveTopology(topology);
      for (let a = 0; a < x; a++) {
        if (busy.includes(a) || !busy.some((b) => ffnRankOf(topo, b) === ffnRankOf(topo, a))) continue;
        await expect.poll(() => links[a]!.state().emptySteps, { timeout: 15_000 }).toBeGreaterThan(0); // counted after its last receive
      }
      for (const l of links) await l.close({ shutdown: true });
      for (const s of servers) expect(await s.wait()).toMatch(/shutdown requested|stopped/);
    } finally {
      for (const l of links) await l.close({ shutdown: false });
      for (const s of servers) await s.stop();
      [...attn, ...ffn].forEach((e) => e.close());
    }
  });
});
