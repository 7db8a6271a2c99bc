/**
 * GPU check of expert parallelism (npm run test:gpu): 2A2F with both FFN ranks (and both
 * attention ranks) on one GPU, connector tcp, each FFN rank holding half of the experts,
 * against the colocated CUDA engine: greedy tokens equal, logits within the CUDA
 * tolerance, with the gate on either side and DBO stages, for both exchanges between the
 * FFN ranks: epTransport tcp (host-staged; the source sums the expert outputs on the host)
 * and peer (the device exchange: the FFN ranks of one process map each other's regions
 * directly; every owner sums its experts' share on the device, the source adds the shares).
 * With peer the FFN ranks' device counters must show every routed pair.
 */
import { rm } from 'node:fs/promises';
import { relativeError } from '../golden.js';
import { buildLoadSpec } from '../../checkpoint/loadSpec.js';
import { afdEngineOpts, busyWork, runSteps, withAfdTopology } from '../afdTesting.js';
import { Engine } from '../../engine.js';
import { roleSpec, writeTinyModel } from '../engineTesting.js';
import { cudaLogitTolerance, type GpuCheck } from './gpuCheck.js';

/** backend: 'cuda' in the GPU suite ('cpu' runs the same check without a GPU). */
export async function expertParallelChecks(backend: 'cuda' | 'cpu' = 'cuda'): Promise<GpuCheck[]> {
  const dir = await writeTinyModel('qwen3_moe', 23);
  const opts = { ...afdEngineOpts, backend };
  const checks: GpuCheck[] = [];
  try {
    const colocated = await Engine.load(await roleSpec(dir, 'colocated'), opts);
    try {
      const variants = (backend === 'cuda' ? (['tcp', 'peer'] as const) : (['tcp'] as const)).flatMap((epTransport) =>
        [false, true].map((gate) => ({ epTransport, gate })),
      );
      for (const { epTransport, gate } of variants) {
        const attnSpec = await roleSpec(dir, 'attention', gate);
        const attn = await Promise.all([0, 1].map(() => Engine.load(attnSpec, opts)));
        const ffn = await Promise.all(
          [0, 1].map(async (rank) => Engine.load((await buildLoadSpec(dir, 'ffn', { computeGateOnAttention: gate, expertParallel: { rank, numRanks: 2 } })).spec, opts)),
        );
        let detail = '';
        let passed = false;
        // A variant that throws is reported as failed; the next variants still run.
        await withAfdTopology('2A2F', attn, ffn, { expertParallel: true, epTransport }, async (servers) => {
          const work = busyWork(2, true);
          const got = await Promise.all(work.map((w) => runSteps(attn[w.a]!, w.seqs, w.blocks, w.stageSplit, 3)));
          let same = true;
          let worst = 0;
          for (const [i, w] of work.entries()) {
            const ref = await runSteps(colocated, w.seqs, w.blocks, w.seqs.length, 3);
            ref.forEach((r, s) => {
              same &&= Array.from(r.tokenIds).join(',') === Array.from(got[i]![s]!.tokenIds).join(',');
              worst = Math.max(worst, relativeError(got[i]![s]!.logits!, r.logits!));
            });
          }
          // Every real token of the first (prefill, sampled) step routes topK pairs; the group's counters hold at least those.
          const pairs = servers.map((s) => (s.expertStats()?.tokensPerExpert ?? []).flat().reduce((a, b) => a + b, 0));
          const counted = pairs.every((n) => n > 0);
          passed = same && worst <= cudaLogitTolerance && counted;
          detail = `tokens ${same ? 'equal' : 'differ'}; worst logits relError ${worst.toExponential(2)}; routed pairs per FFN rank ${pairs.join(', ')}`;
        }).catch((e: unknown) => {
          passed = false;
          detail = `threw: ${e instanceof Error ? e.message : String(e)}`;
        });
        const how = epTransport === 'tcp' ? 'tcp, host-staged exchange' : 'peer, device exchange';
        checks.push({ suite: 'engine', name: `expert parallel 2A2F on one GPU (${how}), gate on attention ${gate}, DBO`, passed, detail });
      }
    } finally {
      colocated.close();
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
  return checks;
}
