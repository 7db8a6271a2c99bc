/**
 * Helpers of the in-process AFD tests (afdMatrix, afdExpertParallel): the step loop one
 * attention rank runs, the work each rank of a topology gets, and a topology of native
 * FfnServers and AttentionLinks over loopback TCP that is always torn down.
 */
import { buildStepPlan, resolveRankConfig, type AfdConfigInput, type PlanSeq, type RankConfig, type ServingConfigInput, type StepResult } from '@afd/shared';
import { AttentionLink } from '../AttentionLink.js';
import type { Engine } from '../engine.js';
import { FfnServer } from '../FfnServer.js';
import { freePortBlock } from '../comm/ports.js';

/** Engine options of the tiny test models (one thread: several engines share the box). */
export const afdEngineOpts = { threads: 1, kvBlockSize: 4, numKvBlocks: 64 };

/**
 * The rank config of an in-process AFD test rank: its role, the afd fields given (test
 * deadlines unless given: 10 s steps, 20 s rendezvous) and serving limits, every other
 * field the schema's default: the same object a role process gets.
 */
export function testRankConfig(role: 'attention' | 'ffn', afd: Omit<AfdConfigInput, 'role'>, serving: ServingConfigInput = {}): RankConfig {
  return resolveRankConfig({ afd: { stepDeadlineMs: 10_000, rendezvousTimeoutMs: 20_000, ...afd, role }, serving });
}

/** Prefill of the sequences, then `decodes` greedy decode steps; returns every step's result (with logits). */
export async function runSteps(engine: Engine, seqs: number[][], blocks: number[][], stageSplit: number, decodes: number): Promise<StepResult[]> {
  const out: StepResult[] = [];
  const cached = seqs.map(() => 0);
  let next = seqs.map((s) => s);
  for (let step = 0; step <= decodes; step++) {
    const plan: PlanSeq[] = next.map((ids, i) => ({ tokenIds: ids, numCached: cached[i]!, blockTable: blocks[i]! }));
    const stepPlan = buildStepPlan(plan, { stageSplit: Math.min(stageSplit, seqs.length), returnLogits: true });
    // A model with gdn layers keeps each sequence's recurrent state in a slot: sequence i's is slot i.
    if (engine.info.numStateSlots > 0) stepPlan.stateSlots = Int32Array.from(seqs, (_, i) => i);
    const r = await engine.step(stepPlan);
    out.push(r);
    next.forEach((ids, i) => (cached[i]! += ids.length));
    next = next.map((_, i) => [r.tokenIds[i]!]);
  }
  return out;
}

/** One attention rank's work: its sequences, block tables and DBO split. */
export interface RankWork {
  a: number;
  seqs: number[][];
  blocks: number[][];
  stageSplit: number;
}

/**
 * Even ranks run two sequences (two DBO stages when dbo), rank 1 runs one (one stage next
 * to its block mate's two); the others stay idle and are called in.
 */
export function busyWork(numAttention: number, dbo: boolean): RankWork[] {
  const busy = Array.from({ length: numAttention }, (_, a) => a).filter((a) => a % 2 === 0 || a === 1);
  return busy.map((a) => {
    const seqs = a === 1 ? [[7, 3, 9 + a]] : [[5 + a, 11, 2, 8], [1, 4 + a, 6]];
    const blocks = seqs.map((_, i) => [2 * i + 10 * a + 1, 2 * i + 10 * a + 2]);
    return { a, seqs, blocks, stageSplit: dbo ? 1 : 2 };
  });
}

/**
 * Joins attention engines (attention role) and FFN engines (ffn role) into `topology` over
 * loopback TCP, runs `body`, then shuts the topology down (each FFN loop must end on the
 * shutdown flag) and always frees every link, server and engine.
 */
export async function withAfdTopology(
  topology: string,
  attn: Engine[],
  ffn: Engine[],
  extra: Omit<AfdConfigInput, 'role' | 'topology' | 'rank' | 'port'>,
  body: (servers: FfnServer[], links: AttentionLink[]) => Promise<void>,
): Promise<void> {
  // Expert parallelism: FFN rank f also listens on base + y + f.
  const base = await freePortBlock(ffn.length * (extra.enableExpertParallel ? 2 : 1));
  const config = (role: 'attention' | 'ffn', rank: number): RankConfig => testRankConfig(role, { ...extra, topology, rank, port: base });
  const servers: FfnServer[] = [];
  const links: AttentionLink[] = [];
  try {
    ffn.forEach((e, f) => servers.push(new FfnServer(e, config('ffn', f))));
    attn.forEach((e, a) => links.push(new AttentionLink(e, config('attention', a))));
    await Promise.all([...servers.map((s) => s.start()), ...links.map((l) => l.connect())]);
    await body(servers, links);
    for (const l of links) await l.close({ shutdown: true });
    for (const s of servers) {
      const reason = await s.wait();
      if (!/shutdown requested|stopped/.test(reason)) throw new Error(`FFN loop ended with "${reason}" instead of the shutdown flag`);
    }
  } finally {
    for (const l of links) await l.close({ shutdown: false });
    for (const s of servers) await s.stop();
    [...attn, ...ffn].forEach((e) => e.close());
  }
}
