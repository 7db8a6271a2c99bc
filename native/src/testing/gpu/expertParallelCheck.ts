/**
 * GPU check of expert parallelism (npm run test:gpu): 2A2F with both FFN ranks (and both
 * attention ranks) on one GPU, connector tcp, each FFN rank holding half of the experts,
 * against the colocated CUDA engine: greedy tokens equal, logits within the CUDA
 * tolerance, with the gate on either side and DBO stages, for both exchanges between the
 * FFN ranks: epTransport tcp (host-staged; the source sums the expert outputs on the host)
 * and peer (the device exchange: the FFN ranks of one process map each other's regions
 * directly; every owner sums its experts' share on the device, the source adds the shares)
 * and, where two GPUs are visible, nccl (the same device exchange over an NCCL communicator
 * of the FFN ranks, FFN rank f on GPU f).
 * With peer the FFN ranks' device counters must show every routed pair.
 */
import { rm } from 'node:fs/promises';
import { relativeError } from '../golden.js';
import { buildLoadSpec } from '../../checkpoint/loadSpec.js';
import { afdEngineOpts, busyWork, runSteps, testRankConfig, withAfdTopology } from '../afdTesting.js';
import { AttentionLink } from '../../AttentionLink.js';
import { FfnServer } from '../../FfnServer.js';
import { freePortBlock } from '../../comm/ports.js';
import { Engine } from '../../engine.js';
import { roleSpec, writeTinyModel } from '../engineTesting.js';
import { probe } from '../../nativeProcess.js';
import { cudaLogitTolerance, type GpuCheck } from './gpuCheck.js';

type EpTransportChoice = 'tcp' | 'peer' | 'nccl';

function visibleGpus(): number {
  return probe().devices.length;
}

/**
 * backend: 'cuda' in the GPU suite ('cpu' runs the same check without a GPU). gpus: CUDA
 * devices visible; with two or more the nccl variants run too, FFN rank f on device f
 * (NCCL refuses two ranks of one communicator on one GPU).
 */
export async function expertParallelChecks(backend: 'cuda' | 'cpu' = 'cuda', gpus = visibleGpus()): Promise<GpuCheck[]> {
  const dir = await writeTinyModel('qwen3_moe', 23);
  const opts = { ...afdEngineOpts, backend };
  const checks: GpuCheck[] = [];
  try {
    const colocated = await Engine.load(await roleSpec(dir, 'colocated'), opts);
    try {
      const transports: EpTransportChoice[] = backend === 'cpu' ? ['tcp'] : gpus >= 2 ? ['tcp', 'peer', 'nccl'] : ['tcp', 'peer'];
      const variants = transports.flatMap((epTransport) => [false, true].map((gate) => ({ epTransport, gate })));
      for (const { epTransport, gate } of variants) {
        const attnSpec = await roleSpec(dir, 'attention', gate);
        const attn = await Promise.all([0, 1].map(() => Engine.load(attnSpec, opts)));
        const ffnOpts = (rank: number) => (epTransport === 'nccl' ? { ...opts, deviceIndex: rank } : opts);
        const ffn = await Promise.all(
          [0, 1].map(async (rank) =>
            Engine.load((await buildLoadSpec(dir, 'ffn', { computeGateOnAttention: gate, expertParallel: { rank, numRanks: 2 } })).spec, ffnOpts(rank)),
          ),
        );
        let detail = '';
        let passed = false;
        // A variant that throws is reported as failed; the next variants still run.
        await withAfdTopology('2A2F', attn, ffn, { enableExpertParallel: true, epTransport }, async (servers) => {
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
        const how = { tcp: 'on one GPU (tcp, host-staged exchange)', peer: 'on one GPU (peer, device exchange)', nccl: 'on two GPUs (nccl, device exchange)' }[epTransport];
        checks.push({ suite: 'engine', name: `expert parallel 2A2F ${how}, gate on attention ${gate}, DBO`, passed, detail });
      }
      if (backend === 'cuda') checks.push(await ncclSharedGpuRefusal(dir, opts));
    } finally {
      colocated.close();
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
  return checks;
}

/**
 * epTransport nccl with both FFN ranks on one GPU: the group's bootstrap (NCCL loaded, rank
 * 0's unique id and each rank's GPU through the mesh) must refuse it on every FFN rank,
 * naming both ranks and the GPU, and the attention ranks must learn it, with nothing left
 * running (every server's loop ends).
 */
async function ncclSharedGpuRefusal(dir: string, opts: typeof afdEngineOpts & { backend: 'cuda' | 'cpu' }): Promise<GpuCheck> {
  const attnSpec = await roleSpec(dir, 'attention', false);
  const attn = await Promise.all([0, 1].map(() => Engine.load(attnSpec, opts)));
  const ffn = await Promise.all(
    [0, 1].map(async (rank) => Engine.load((await buildLoadSpec(dir, 'ffn', { expertParallel: { rank, numRanks: 2 } })).spec, opts)),
  );
  const base = await freePortBlock(4);
  const o = { topology: '2A2F', port: base, enableExpertParallel: true, epTransport: 'nccl' } as const;
  const servers = ffn.map((e, f) => new FfnServer(e, testRankConfig('ffn', { ...o, rank: f })));
  const links = attn.map((e, a) => new AttentionLink(e, testRankConfig('attention', { ...o, rank: a })));
  try {
    const settled = await Promise.allSettled([...servers.map((s) => s.start()), ...links.map((l) => l.connect())]);
    const why = settled.map((r) => (r.status === 'rejected' ? (r.reason instanceof Error ? r.reason.message : String(r.reason)) : 'no error'));
    const named = /epTransport nccl needs every FFN rank on a GPU of its own .*FFN ranks 0 and 1 both use GPU \S+ of host/;
    const passed = why.slice(0, 2).every((m) => named.test(m)) && why.slice(2).every((m) => m !== 'no error') && servers.every((s) => s.state().state === 'failed');
    return { suite: 'engine', name: 'expert parallel 2A2F over nccl with both FFN ranks on one GPU is refused, naming them', passed, detail: why.join(' | ').slice(0, 600) };
  } finally {
    for (const l of links) await l.close({ shutdown: false });
    for (const s of servers) await s.stop();
    [...attn, ...ffn].forEach((e) => e.close());
  }
}
