/**
 * Every topology x DBO on/off x gate placement, in one process over real loopback TCP:
 * x attention-role engines (AttentionLink) and y FFN-role engines (FfnServer). Busy ranks
 * step concurrently (some with two DBO stages, a block mate with one), idle block peers
 * are called into each step, and every sampled token and logit row equals the colocated
 * engine's. Role processes: agent/src/afd/topologies.int.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ffnRankOf, resolveTopology, type StepResult } from '@afd/shared';
import { Engine } from '../engine.js';
import { roleSpec, writeTinyModel } from '../engineTesting.js';
import type { ModelLoadSpec } from '../modelSpec.js';
import { afdEngineOpts as engineOpts, busyWork, runSteps, withAfdTopology } from './afdTesting.js';

let dir = '';
let colocated: Engine;
/** Load specs by role and gate placement; promises, so concurrent loads share one. */
const specs = new Map<string, Promise<ModelLoadSpec>>();
/** The colocated engine's steps for attention rank a's work (the same in every combination). */
const references = new Map<number, Promise<StepResult[]>>();

beforeAll(async () => {
  dir = await writeTinyModel('qwen3_moe', 21);
  colocated = await Engine.load(await roleSpec(dir, 'colocated'), engineOpts);
});
afterAll(() => colocated?.close());

function spec(role: 'attention' | 'ffn', gate: boolean): Promise<ModelLoadSpec> {
  const key = `${role}-${gate}`;
  if (!specs.has(key)) specs.set(key, roleSpec(dir, role, gate));
  return specs.get(key)!;
}

const topologies = ['1A1F', '2A1F', '2A2F', '3A2F', '4A2F', '4A4F'];
const combos = topologies.flatMap((topology) => [false, true].flatMap((dbo) => [false, true].map((gate) => ({ topology, dbo, gate }))));

describe.each(combos)('$topology, DBO $dbo, gate on attention $gate', ({ topology, dbo, gate }) => {
  it('tokens and logits equal the colocated engine', { timeout: 60_000 }, async () => {
    const [x, y] = topology.match(/\d+/g)!.map(Number) as [number, number];
    const attn = await Promise.all(Array.from({ length: x }, async () => Engine.load(await spec('attention', gate), engineOpts)));
    const ffn = await Promise.all(Array.from({ length: y }, async () => Engine.load(await spec('ffn', gate), engineOpts)));
    await withAfdTopology(topology, attn, ffn, {}, async (_servers, links) => {
      const work = busyWork(x, dbo);
      const got = await Promise.all(work.map((w) => runSteps(attn[w.a]!, w.seqs, w.blocks, w.stageSplit, 3)));
      for (const [i, w] of work.entries()) {
        if (!references.has(w.a)) references.set(w.a, runSteps(colocated, w.seqs, w.blocks, w.seqs.length, 3));
        const ref = await references.get(w.a)!;
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
