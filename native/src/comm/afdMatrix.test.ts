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
import { roleSpec, writeTinyModel } from '../testing/engineTesting.js';
import type { ModelLoadSpec } from '../modelSpec.js';
import { afdEngineOpts as engineOpts, busyWork, runSteps, withAfdTopology } from '../testing/afdTesting.js';

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

const combos = models.flatMap(({ arch, topologies }) =>
  topologies.flatMap((topology) => [false, true].flatMap((dbo) => [false, true].map((gate) => ({ arch, topology, dbo, gate })))),
);

describe.each(combos)('$arch $topology, DBO $dbo, gate on attention $gate', ({ arch, topology, dbo, gate }) => {
  it('tokens and logits equal the colocated engine', { timeout: 60_000 }, async () => {
    const [x, y] = topology.match(/\d+/g)!.map(Number) as [number, number];
    const attn = await Promise.all(Array.from({ length: x }, async () => Engine.load(await spec(arch, 'attention', gate), engineOpts)));
    const ffn = await Promise.all(Array.from({ length: y }, async () => Engine.load(await spec(arch, 'ffn', gate), engineOpts)));
    await withAfdTopology(topology, attn, ffn, {}, async (_servers, links) => {
      const work = busyWork(x, dbo);
      const got = await Promise.all(work.map((w) => runSteps(attn[w.a]!, w.seqs, w.blocks, w.stageSplit, 3)));
      for (const [i, w] of work.entries()) {
        const key = `${arch}-${w.a}`;
        if (!references.has(key)) references.set(key, runSteps(colocated.get(arch)!, w.seqs, w.blocks, w.seqs.length, 3));
        const ref = await references.get(key)!;
        for (let s = 0; s < ref.length; s++) {
          expect(Array.from(got[i]![s]!.tokenIds), `rank ${w.a} step ${s}`).toEqual(Array.from(ref[s]!.tokenIds));
          expect(got[i]![s]!.logits, `rank ${w.a} step ${s} logits`).toEqual(ref[s]!.logits);
        }
      }
      // Idle ranks that share a block with a busy rank were called into its steps.
      const topo = resolveTopology(topology);
      const busy = work.map((w) => w.a);
      for (let a = 0; a < x; a++) {
        if (busy.includes(a) || !busy.some((b) => ffnRankOf(topo, b) === ffnRankOf(topo, a))) continue;
        await expect.poll(() => links[a]!.state().emptySteps, { timeout: 15_000 }).toBeGreaterThan(0); // counted after its last receive
      }
    });
  });
});
