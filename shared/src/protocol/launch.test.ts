import { describe, expect, it } from 'vitest';
import { resolveTopology } from '../topology/spec.js';
import { servingConfigSchema } from '../config/servingConfig.js';
import { launchSpecSchema, rankStateSchema, topologyStateSchema, type LaunchSpecInput } from './launch.js';

const place = (role: 'attention' | 'ffn' | 'colocated', rank: number, agentId = 'host-a') => ({ role, rank, agentId, backend: 'cpu' as const });

const spec3A2F: LaunchSpecInput = {
  mode: 'afd',
  topology: '3A2F',
  placements: [place('ffn', 0), place('ffn', 1, 'host-b'), place('attention', 0), place('attention', 1), place('attention', 2, 'host-b')],
};

function problems(input: unknown): string[] {
  const r = launchSpecSchema.safeParse(input);
  if (r.success) throw new Error('expected rejection');
  return r.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`);
}

describe('launch spec', () => {
  it('fills defaults and round-trips', () => {
    const spec = launchSpecSchema.parse(spec3A2F);
    expect(spec.mode).toBe('afd');
    expect(spec.model).toEqual({ dir: null, loadFormat: 'auto', seed: 0, servedModelName: null });
    expect(spec.apiPort).toBe(8000);
    if (spec.mode === 'afd') {
      expect(spec.topology).toEqual(resolveTopology('3A2F')); // resolved once, here
      expect(spec.afd.connector).toBe('tcp');
      expect(spec.afd.ncclEnv).toEqual({ NCCL_NVLS_ENABLE: '0' });
    }
    expect(spec.placements[0]!.deviceIndex).toBe(0);
    expect(launchSpecSchema.parse(JSON.parse(JSON.stringify(spec)))).toEqual(spec);
  });

  it('accepts a structured topology and a colocated launch', () => {
    expect(launchSpecSchema.safeParse({ ...spec3A2F, topology: { attention: { ranks: 3 }, ffn: { dp: 2 } } }).success).toBe(true);
    const colocated = launchSpecSchema.parse({ mode: 'colocated', placements: [{ ...place('colocated', 0), backend: 'cuda', deviceIndex: 1 }], model: { dir: '/models/qwen3' }, apiPort: 0 });
    expect(colocated.placements[0]!.deviceIndex).toBe(1);
  });

  it('refuses a tensor-parallel topology (tp > 1 is not implemented) and carries enableExpertParallel', () => {
    const tp = problems({ ...spec3A2F, topology: { attention: { ranks: 4, tp: 2 }, ffn: { ranks: 2 } } });
    expect(tp).toHaveLength(1);
    expect(tp[0]).toMatch(/^topology: attention.tp is 2 \(tp-not-implemented.*give attention: \{ dp: 4 \} \(tp 1\), or the name "4A2F"/);
    const ep = launchSpecSchema.parse({ ...spec3A2F, afd: { enableExpertParallel: true } });
    expect(ep.mode === 'afd' && ep.afd.enableExpertParallel).toBe(true);
  });

  it('rejects missing, duplicate and out-of-range placements', () => {
    expect(problems({ ...spec3A2F, placements: spec3A2F.placements.slice(0, 4) })).toEqual(['placements: no placement for attention rank(s) 2']);
    expect(problems({ ...spec3A2F, placements: [...spec3A2F.placements.slice(0, 4), place('attention', 0)] })).toEqual([
      'placements.4: attention rank 0 is placed twice',
      'placements: no placement for attention rank(s) 2',
    ]);
    expect(problems({ ...spec3A2F, placements: [...spec3A2F.placements, place('ffn', 2)] })).toEqual(['placements.5.rank: ffn rank 2 does not exist (valid: 0..1)']);
    expect(problems({ ...spec3A2F, placements: [...spec3A2F.placements, place('colocated', 0)] })[0]).toContain('role colocated has no ranks');
    expect(problems({ mode: 'colocated', placements: [place('attention', 0)] })[0]).toContain('role attention has no ranks');
    expect(problems({ mode: 'colocated', placements: [place('colocated', 1)] })).toContain('placements.0.rank: colocated rank 1 does not exist (valid: 0..0)');
  });

  it('takes nccl and peer on CUDA ranks only, and peer on one host only', () => {
    const cuda = (role: 'attention' | 'ffn', rank: number, agentId = 'host-a', deviceIndex = role === 'ffn' ? rank : 2 + rank) => ({ ...place(role, rank, agentId), backend: 'cuda' as const, deviceIndex });
    const oneHost = [cuda('ffn', 0), cuda('ffn', 1), cuda('attention', 0), cuda('attention', 1), cuda('attention', 2)];
    const twoHosts = [cuda('ffn', 0), cuda('ffn', 1, 'host-b'), cuda('attention', 0), cuda('attention', 1), cuda('attention', 2, 'host-b')];
    for (const connector of ['nccl', 'peer'] as const) expect(launchSpecSchema.safeParse({ ...spec3A2F, placements: oneHost, afd: { connector } }).success).toBe(true);
    expect(launchSpecSchema.safeParse({ ...spec3A2F, placements: twoHosts, afd: { connector: 'nccl' } }).success).toBe(true);
    expect(problems({ ...spec3A2F, placements: [...oneHost.slice(0, 4), place('attention', 2)], afd: { connector: 'nccl' } })).toEqual([
      'afd.connector: connector nccl needs every rank on a CUDA device (it moves GPU memory; on cpu: attention 2); use connector tcp for CPU ranks',
    ]);
    expect(problems({ ...spec3A2F, placements: twoHosts, afd: { connector: 'peer' } })).toEqual([
      'afd.connector: connector peer (CUDA IPC) needs every rank on one host (ranks are on agents host-a, host-b); use connector nccl across hosts',
    ]);
    // NCCL's two-rank communicator per attention-FFN pair refuses one GPU for both; other ranks may share.
    const shared = [cuda('ffn', 0, 'host-a', 0), cuda('ffn', 1, 'host-a', 1), cuda('attention', 0, 'host-a', 0), cuda('attention', 1, 'host-a', 1), cuda('attention', 2, 'host-a', 0)];
    expect(problems({ ...spec3A2F, placements: shared, afd: { connector: 'nccl' } })).toEqual([
      "afd.connector: connector nccl needs an attention rank and its FFN rank on different GPUs (attention 0 and ffn 0 are both on host-a GPU 0: NCCL refuses two ranks of one communicator on one GPU); use connector peer for ranks that share a host's GPUs",
    ]);
    expect(launchSpecSchema.safeParse({ ...spec3A2F, placements: shared, afd: { connector: 'peer' } }).success).toBe(true);
    // 3A2F's blocks: attention 0, 1 -> ffn 0; attention 2 -> ffn 1.
    const crossed = [cuda('ffn', 0, 'host-a', 0), cuda('ffn', 1, 'host-a', 1), cuda('attention', 0, 'host-a', 1), cuda('attention', 1, 'host-a', 1), cuda('attention', 2, 'host-a', 0)];
    expect(launchSpecSchema.safeParse({ ...spec3A2F, placements: crossed, afd: { connector: 'nccl' } }).success).toBe(true);
  });

  it('takes epTransport peer with expert parallelism only when every FFN rank is on CUDA on one host', () => {
    const cuda = (role: 'attention' | 'ffn', rank: number, agentId = 'host-a') => ({ ...place(role, rank, agentId), backend: 'cuda' as const });
    const ep = { enableExpertParallel: true, epTransport: 'peer' } as const;
    // The attention ranks may be anywhere (their link is the connector's business).
    const ffnOnOneGpuHost = [cuda('ffn', 0), cuda('ffn', 1), place('attention', 0), place('attention', 1), place('attention', 2, 'host-b')];
    const spec = launchSpecSchema.parse({ ...spec3A2F, placements: ffnOnOneGpuHost, afd: ep });
    expect(spec.mode === 'afd' && spec.afd.epTransport).toBe('peer');
    expect(problems({ ...spec3A2F, afd: ep })).toEqual([
      'afd.epTransport: epTransport peer needs every FFN rank on a CUDA device (on cpu: ffn 0, ffn 1); use epTransport tcp',
      'afd.epTransport: epTransport peer (CUDA IPC) needs every FFN rank on one host (FFN ranks are on agents host-a, host-b); use epTransport nccl or tcp across hosts',
    ]);
    // Without expert parallelism there is no exchange to carry; tcp and auto fit any placement.
    for (const afd of [{ epTransport: 'peer' }, { enableExpertParallel: true, epTransport: 'tcp' }, { enableExpertParallel: true }] as const) {
      expect(launchSpecSchema.safeParse({ ...spec3A2F, afd }).success).toBe(true);
    }
    expect(problems({ ...spec3A2F, afd: { epTransport: 'nvlink' } })[0]).toMatch(/^afd\.epTransport: .*"auto"\|"tcp"\|"nccl"\|"peer"/);
  });

  it('takes epTransport nccl (asked, or auto under connector nccl) only with a CUDA GPU per FFN rank, on any hosts', () => {
    const cuda = (role: 'attention' | 'ffn', rank: number, agentId = 'host-a', deviceIndex = 0) => ({ ...place(role, rank, agentId), backend: 'cuda' as const, deviceIndex });
    const ep = { enableExpertParallel: true, epTransport: 'nccl' } as const;
    const attention = [place('attention', 0), place('attention', 1), place('attention', 2)];
    const ownGpus = [cuda('ffn', 0, 'host-a', 0), cuda('ffn', 1, 'host-a', 1), ...attention];
    const twoHosts = [cuda('ffn', 0, 'host-a', 0), cuda('ffn', 1, 'host-b', 0), ...attention];
    for (const placements of [ownGpus, twoHosts]) expect(launchSpecSchema.safeParse({ ...spec3A2F, placements, afd: ep }).success).toBe(true);
    const shared = [cuda('ffn', 0, 'host-a', 1), cuda('ffn', 1, 'host-a', 1), ...attention];
    expect(problems({ ...spec3A2F, placements: shared, afd: ep })).toEqual([
      'afd.epTransport: epTransport nccl needs every FFN rank on a GPU of its own (ffn 0 and ffn 1 are both on host-a GPU 1); use epTransport peer for FFN ranks that share a host\'s GPUs',
    ]);
    expect(problems({ ...spec3A2F, afd: ep })).toEqual([
      'afd.epTransport: epTransport nccl needs every FFN rank on a CUDA device (on cpu: ffn 0, ffn 1); use epTransport tcp',
    ]);
    // auto under connector nccl means nccl (every rank on CUDA for the connector anyway).
    const allCuda = [cuda('ffn', 0, 'host-a', 2), cuda('ffn', 1, 'host-a', 2), cuda('attention', 0, 'host-a', 0), cuda('attention', 1, 'host-a', 1), cuda('attention', 2, 'host-b', 0)];
    expect(problems({ ...spec3A2F, placements: allCuda, afd: { connector: 'nccl', enableExpertParallel: true } })).toEqual([
      'afd.epTransport: epTransport auto (nccl under connector nccl) needs every FFN rank on a GPU of its own (ffn 0 and ffn 1 are both on host-a GPU 2); use epTransport peer for FFN ranks that share a host\'s GPUs',
    ]);
    expect(launchSpecSchema.safeParse({ ...spec3A2F, placements: allCuda, afd: { connector: 'nccl', enableExpertParallel: true, epTransport: 'peer' } }).success).toBe(true);
  });

  it('rejects bad topologies, bad fields and unknown keys', () => {
    expect(problems({ ...spec3A2F, topology: '2A3F' })[0]).toContain('attention-ge-ffn');
    expect(problems({ ...spec3A2F, placements: [{ ...place('ffn', -1) }, ...spec3A2F.placements.slice(1)] }).join()).toContain('cannot be negative');
    expect(problems({ ...spec3A2F, apiPort: 70000 })[0]).toMatch(/^apiPort/);
    expect(problems({ ...spec3A2F, afd: { role: 'ffn' } })[0]).toMatch(/^afd/);
    expect(problems({ ...spec3A2F, extra: 1 })[0]).toMatch(/extra/);
    expect(problems({ ...spec3A2F, mode: 'pipeline' })[0]).toMatch(/^mode/);
    expect(problems({ ...spec3A2F, placements: [{ ...place('ffn', 0), backend: 'rocm' }] }).join()).toContain('backend');
  });

  it('takes an absolute model directory only: an agent\'s working directory means nothing to the client', () => {
    expect(launchSpecSchema.parse({ ...spec3A2F, model: { dir: '/models/q' } }).model.dir).toBe('/models/q');
    expect(problems({ ...spec3A2F, model: { dir: 'models/q' } })).toEqual(['model.dir: must be an absolute path on the agent hosts (it is not resolved against any working directory)']);
    expect(problems({ ...spec3A2F, model: { dir: './q' } })[0]).toMatch(/^model\.dir: must be an absolute path/);
  });

  it('carries the restart policy and the ranks\' serving limits, with defaults', () => {
    const spec = launchSpecSchema.parse(spec3A2F);
    expect(spec.restart).toEqual({ policy: 'never', maxRestarts: 10, backoffMs: 1000, maxBackoffMs: 30_000 });
    expect(spec.serving).toEqual(servingConfigSchema.parse({})); // the serving schema's own defaults (rankConfig.test.ts lists them)
    const set = launchSpecSchema.parse({ ...spec3A2F, restart: { policy: 'on-failure', maxRestarts: 3 }, serving: { maxNumSeqs: 8, maxModelLen: 512, kvCacheMib: 64, maxQueuedRequests: 0 } });
    expect(set.restart).toMatchObject({ policy: 'on-failure', maxRestarts: 3 });
    expect(set.serving).toMatchObject({ maxNumSeqs: 8, maxModelLen: 512, kvCacheMib: 64, maxQueuedRequests: 0, maxNumBatchedTokens: 2048 });
    expect(problems({ ...spec3A2F, restart: { policy: 'always' } })[0]).toMatch(/^restart\.policy/);
    expect(problems({ ...spec3A2F, serving: { kvCacheMib: 64, kvMemoryFraction: 0.5 } })).toEqual([
      'serving.kvMemoryFraction: give kvCacheMib or kvMemoryFraction, not both (one fixes the KV budget, the other derives it from free memory)',
    ]);
    expect(problems({ ...spec3A2F, serving: { maxNumSeqs: 0 } })[0]).toMatch(/^serving\.maxNumSeqs/);
    expect(problems({ ...spec3A2F, serving: { apiKey: 'k' } })[0]).toMatch(/apiKey/);
  });
});

describe('rank and topology state', () => {
  it('round-trips', () => {
    const rank = {
      role: 'attention' as const,
      rank: 0,
      agentId: 'host-a',
      state: 'loading' as const,
      pid: 1234,
      apiUrl: null,
      progress: { phase: 'loading' as const, bytesDone: 10, bytesTotal: 100 },
      exitCode: null,
      message: null,
    };
    expect(rankStateSchema.parse(rank)).toEqual(rank);
    const state = { launchId: 'L1', state: 'launching' as const, spec: launchSpecSchema.parse(spec3A2F), ranks: [rank], routerUrl: null };
    // An older agent reports no gpus: read as none.
    expect(topologyStateSchema.parse(JSON.parse(JSON.stringify(state)))).toEqual({ ...state, gpus: [] });
    const gpus = [{ agentId: 'host-a', deviceIndex: 0, ranks: [{ role: 'ffn' as const, rank: 0, smShare: 60 }, { role: 'attention' as const, rank: 0, smShare: null }], sharing: 'mps' as const, note: null }];
    expect(topologyStateSchema.parse({ ...state, gpus })).toEqual({ ...state, gpus });
    expect(topologyStateSchema.safeParse({ ...state, state: 'exploded' }).success).toBe(false);
  });
});
