import { describe, expect, it } from 'vitest';
import { afdConfigSchema, afdOptionsSchema, afdPortCount, DEFAULT_BATCH_BUCKETS } from './afdConfig.js';
import { AFD_CONNECTORS, EP_TRANSPORTS, isDeviceConnector } from './connectors.js';
import { mergeConfigInput, parseAfdConfig, parseAfdConfigJson, RankConfigError, resolveRankConfig } from './parse.js';
import type { AfdConfigInput } from './afdConfig.js';

/** The afd section alone, parsed as it is inside a rank config. */
const resolveAfdConfig = (afd: AfdConfigInput) => afdConfigSchema.parse(afd);
import { resolveTopology } from '../topology/spec.js';
import type { FieldIssue } from '../util/issues.js';

function issuesOf(input: unknown): FieldIssue[] {
  const r = parseAfdConfig(input);
  if (r.ok) throw new Error(`expected ${JSON.stringify(input)} to be rejected`);
  return r.issues;
}
const paths = (input: unknown) => issuesOf(input).map((i) => i.path);

describe('AFD config defaults', () => {
  it('fills every documented default from {}', () => {
    expect(resolveAfdConfig({})).toEqual({
      role: 'colocated',
      rank: 0,
      topology: resolveTopology('1A1F'),
      host: '127.0.0.1',
      ffnHosts: [],
      prefillHosts: [],
      listenHost: '',
      rendezvousId: '',
      connector: 'tcp',
      port: 29500,
      dbo: { enabled: false, decodeTokenThreshold: 32, prefillTokenThreshold: 512, onSharedGpu: 'off' },
      computeGateOnAttention: false,
      cudaGraph: { policy: 'decode-only', batchBuckets: [...DEFAULT_BATCH_BUCKETS] },
      stepDeadlineMs: 5000,
      ncclEnv: { NCCL_NVLS_ENABLE: '0' },
      enableExpertParallel: false,
      epTransport: 'auto',
      pd: { port: 29700, minPromptTokens: 64, transport: 'auto' },
      rendezvousTimeoutMs: 300000,
    });
  });

  it('takes prefill ranks (wPxAyF): their role, hosts and KV-transfer port are checked against the topology', () => {
    const cfg = resolveAfdConfig({ role: 'prefill', rank: 1, topology: '2P1A1F', prefillHosts: ['10.0.0.5', '10.0.0.6'], pd: { port: 30000 } });
    expect(cfg.topology).toEqual({ name: '2P1A1F', prefill: { ranks: 2, dp: 2, tp: 1 }, attention: { ranks: 1, dp: 1, tp: 1 }, ffn: { ranks: 1, dp: 1, tp: 1 }, worldSize: 2 });
    expect(cfg.pd).toEqual({ port: 30000, minPromptTokens: 64, transport: 'auto' });
    expect(afdConfigSchema.parse(JSON.parse(JSON.stringify(cfg)))).toEqual(cfg);
    expect(() => resolveAfdConfig({ role: 'prefill', rank: 2, topology: '2P1A1F' })).toThrow(/prefill rank 2 does not exist in 2P1A1F \(valid: 0\.\.1\)/);
    expect(() => resolveAfdConfig({ role: 'prefill', rank: 0, topology: '1A1F' })).toThrow(/it has no prefill ranks; name them as wPxAyF/);
    expect(() => resolveAfdConfig({ topology: '2P1A1F', prefillHosts: ['a'] })).toThrow(/has 1 hosts but 2P1A1F has 2 prefill ranks/);
    expect(() => resolveAfdConfig({ topology: '3P1A1F', pd: { port: 65534 } })).toThrow(/pd\.port\.\.pd\.port\+2, which passes 65535/);
  });

  it('takes the KV transfer transport of pd: auto (default), tcp or peer', () => {
    for (const transport of ['auto', 'tcp', 'peer'] as const) expect(resolveAfdConfig({ topology: '1P1A1F', pd: { transport } }).pd.transport).toBe(transport);
    expect(() => resolveAfdConfig({ topology: '1P1A1F', pd: { transport: 'rdma' as never } })).toThrow(/transport/);
  });

  it('keeps given values, partial nested objects and structured topologies', () => {
    const cfg = resolveAfdConfig({
      role: 'ffn',
      rank: 1,
      topology: { attention: { dp: 4 }, ffn: { dp: 2 } },
      connector: 'nccl',
      ffnHosts: ['10.0.0.2', '10.0.0.3'],
      dbo: { enabled: true },
      cudaGraph: { policy: 'off' },
      ncclEnv: { NCCL_DEBUG: 'INFO', NCCL_NVLS_ENABLE: '0' },
    });
    expect(cfg.dbo).toEqual({ enabled: true, decodeTokenThreshold: 32, prefillTokenThreshold: 512, onSharedGpu: 'off' });
    expect(cfg.cudaGraph.batchBuckets).toEqual([...DEFAULT_BATCH_BUCKETS]);
    expect(cfg.ncclEnv).toEqual({ NCCL_DEBUG: 'INFO', NCCL_NVLS_ENABLE: '0' });
    // The topology is resolved once, here: the config carries the Topology.
    expect(cfg.topology).toEqual({ name: '4A2F', attention: { ranks: 4, dp: 4, tp: 1 }, ffn: { ranks: 2, dp: 2, tp: 1 }, worldSize: 6 });
    // The output is valid input again (what the agent forwards to a role process).
    expect(afdConfigSchema.parse(JSON.parse(JSON.stringify(cfg)))).toEqual(cfg);
  });

  it('forces NCCL_NVLS_ENABLE to "0"', () => {
    expect(resolveAfdConfig({ ncclEnv: { NCCL_SOCKET_IFNAME: 'eth0' } }).ncclEnv).toEqual({ NCCL_SOCKET_IFNAME: 'eth0', NCCL_NVLS_ENABLE: '0' });
    expect(issuesOf({ ncclEnv: { NCCL_NVLS_ENABLE: '1' } })).toEqual([
      { path: 'ncclEnv.NCCL_NVLS_ENABLE', message: expect.stringContaining('must be "0"') },
    ]);
  });
});

describe('AFD connectors', () => {
  it('accepts tcp, nccl and peer (peer = GPUs of one host through CUDA IPC)', () => {
    expect(AFD_CONNECTORS).toEqual(['tcp', 'nccl', 'peer']);
    expect(resolveAfdConfig({ role: 'ffn', connector: 'peer' }).connector).toBe('peer');
    expect(afdOptionsSchema.parse({ connector: 'peer' }).connector).toBe('peer');
    expect(afdConfigSchema.parse(JSON.parse(JSON.stringify(resolveAfdConfig({ connector: 'peer' })))).connector).toBe('peer');
  });

  it('tells device connectors from tcp', () => {
    expect(AFD_CONNECTORS.filter(isDeviceConnector)).toEqual(['nccl', 'peer']);
  });

  it('names the choices when the connector is unknown', () => {
    const [issue] = issuesOf({ connector: 'ipc' });
    expect(issue?.path).toBe('connector');
    expect(issue?.message).toMatch(/peer/);
  });
});

describe('AFD config bad inputs', () => {
  it('rejects wrong types naming the field', () => {
    expect(paths({ role: 'router' })).toEqual(['role']);
    expect(paths({ connector: 'rdma' })).toEqual(['connector']);
    expect(paths({ port: '8000' })).toEqual(['port']);
    expect(paths({ dbo: { enabled: 'yes' } })).toEqual(['dbo.enabled']);
    expect(paths({ dbo: 'on' })).toEqual(['dbo']);
    expect(paths({ computeGateOnAttention: 1 })).toEqual(['computeGateOnAttention']);
    expect(paths({ cudaGraph: { batchBuckets: [1, 'two'] } })).toEqual(['cudaGraph.batchBuckets[1]']);
    expect(paths({ stepDeadlineMs: 0 })).toEqual(['stepDeadlineMs']);
    expect(paths({ ffnHosts: 'a,b' })).toEqual(['ffnHosts']);
    expect(paths({ ncclEnv: { NCCL_DEBUG: 3 } })).toEqual(['ncclEnv.NCCL_DEBUG']);
    expect(paths(null)).toEqual(['']);
    expect(paths([])).toEqual(['']);
  });

  it('rejects negative and out-of-range ranks and ports', () => {
    expect(issuesOf({ rank: -1 })).toEqual([{ path: 'rank', message: 'ranks are zero-based and cannot be negative' }]);
    expect(paths({ rank: 1.5 })).toEqual(['rank']);
    expect(issuesOf({ role: 'attention', topology: '2A1F', rank: 2 })[0]!.message).toContain('attention rank 2 does not exist in 2A1F');
    expect(issuesOf({ role: 'ffn', topology: '3A2F', rank: 2 })[0]!.message).toContain('ffn rank 2 does not exist in 3A2F (valid: 0..1)');
    // Port 0 (ephemeral) serves one FFN rank only: the others' ports are port + f.
    expect(resolveAfdConfig({ port: 0 }).port).toBe(0);
    expect(issuesOf({ port: 0, topology: '2A2F' })).toEqual([{ path: 'port', message: expect.stringContaining('port 0 (ephemeral) works only with one FFN rank') }]);
    expect(afdOptionsSchema.safeParse({ port: 0 }).success).toBe(false); // a launch always names a base port
    expect(paths({ port: 70000 })).toEqual(['port']);
    expect(issuesOf({ port: 65535, topology: '2A2F' })[0]).toEqual({ path: 'port', message: expect.stringContaining('65535') });
  });

  it('rejects A < F and other topology rules on the topology field', () => {
    const issues = issuesOf({ topology: '1A2F' });
    expect(issues).toHaveLength(1);
    expect(issues[0]!.path).toBe('topology');
    expect(issues[0]!.message).toContain('attention-ge-ffn');
    expect(issuesOf({ topology: 'banana' })[0]!.message).toContain('topology-syntax');
    expect(issuesOf({ topology: { attention: { dp: 2, tp: 2, ranks: 3 }, ffn: { ranks: 1 } } })[0]!.message).toContain('dp-x-tp');
  });

  it('counts the FFN group ports of expert parallelism in the port range', () => {
    expect(parseAfdConfig({ topology: '2A2F', port: 65533 }).ok).toBe(true);
    const issues = issuesOf({ topology: '2A2F', port: 65533, enableExpertParallel: true });
    expect(issues.map((i) => i.path)).toEqual(['port']);
    expect(issues[0]!.message).toContain('port..port+3');
    expect(afdPortCount(2, true)).toBe(4);
    expect(afdPortCount(1, true)).toBe(1);
    expect(afdPortCount(3, false)).toBe(3);
  });

  it('takes epTransport auto (default), tcp, peer or nccl and names the choices otherwise', () => {
    expect(EP_TRANSPORTS).toEqual(['auto', 'tcp', 'nccl', 'peer']);
    expect(resolveAfdConfig({ role: 'ffn', enableExpertParallel: true, epTransport: 'peer' }).epTransport).toBe('peer');
    expect(afdOptionsSchema.parse({}).epTransport).toBe('auto');
    const [issue] = issuesOf({ epTransport: 'ipc' });
    expect(issue?.path).toBe('epTransport');
    expect(issue?.message).toMatch(/"auto"\|"tcp"\|"nccl"\|"peer"/);
  });

  it('rejects unknown keys at every level, one issue per key', () => {
    expect(issuesOf({ rolee: 'ffn', dbo: { enable: true }, cudaGraph: { buckets: [1] } })).toEqual([
      { path: 'dbo.enable', message: expect.stringContaining('unknown key') },
      { path: 'cudaGraph.buckets', message: expect.stringContaining('unknown key') },
      { path: 'rolee', message: expect.stringContaining('unknown key') },
    ]);
    expect(paths({ ncclEnv: { CUDA_VISIBLE_DEVICES: '0' } })).toEqual(['ncclEnv.CUDA_VISIBLE_DEVICES']);
  });

  it('checks cross-field rules: ffnHosts count, bucket order, thresholds', () => {
    expect(issuesOf({ topology: '3A2F', ffnHosts: ['a'] })[0]!.message).toContain('give one per FFN rank');
    expect(paths({ cudaGraph: { batchBuckets: [4, 2] } })).toEqual(['cudaGraph.batchBuckets']);
    expect(paths({ cudaGraph: { batchBuckets: [2, 2] } })).toEqual(['cudaGraph.batchBuckets']);
    expect(paths({ cudaGraph: { batchBuckets: [] } })).toEqual(['cudaGraph.batchBuckets']);
    expect(paths({ cudaGraph: { policy: 'full' } })).toEqual(['cudaGraph.policy']);
    expect(paths({ dbo: { decodeTokenThreshold: 0, prefillTokenThreshold: -5 } })).toEqual(['dbo.decodeTokenThreshold', 'dbo.prefillTokenThreshold']);
  });

  it('reports every problem at once, and a rank config names them from its root', () => {
    expect(paths({ rank: -1, port: 'x', extra: true }).sort()).toEqual(['extra', 'port', 'rank']);
    expect(() => resolveRankConfig({ afd: { port: 'x' as never } })).toThrow(RankConfigError);
    expect(() => resolveRankConfig({ afd: { port: 'x' as never } })).toThrow(/invalid rank config: afd\.port: /);
  });
});

describe('AFD config helpers', () => {
  it('parses JSON text and reports a syntax error', () => {
    const ok = parseAfdConfigJson('{"role":"attention","topology":"2A1F","rank":1}');
    expect(ok.ok && ok.value.rank).toBe(1);
    const bad = parseAfdConfigJson('{role: attention}');
    expect(bad.ok).toBe(false);
    if (!bad.ok) expect(bad.issues[0]!.message).toMatch(/not valid JSON/);
  });

  it('merges overrides over a base, nested objects key by key', () => {
    const merged = mergeConfigInput<AfdConfigInput>(
      { role: 'attention', topology: '2A1F', dbo: { enabled: true, decodeTokenThreshold: 8 }, ncclEnv: { NCCL_DEBUG: 'INFO' } },
      { rank: 1, port: undefined, dbo: { decodeTokenThreshold: 16 }, topology: { attention: { ranks: 2 }, ffn: { ranks: 1 } } },
    );
    expect(merged).toEqual({
      role: 'attention',
      rank: 1,
      topology: { attention: { ranks: 2 }, ffn: { ranks: 1 } },
      dbo: { enabled: true, decodeTokenThreshold: 16 },
      ncclEnv: { NCCL_DEBUG: 'INFO' },
    });
    expect(parseAfdConfig(merged).ok).toBe(true);
  });

  it('afdOptionsSchema is strict and carries no per-rank fields', () => {
    expect(afdOptionsSchema.parse({}).connector).toBe('tcp');
    expect(afdOptionsSchema.safeParse({ role: 'ffn' }).success).toBe(false);
  });
});
