import { describe, expect, it } from 'vitest';
import { DEFAULT_KV_MEMORY_FRACTION, kvCacheSizing, resolveTopology } from '@afd/shared';
import { resolveRoleConfig } from './roleConfig.js';
import { MAX_STATE_SLOTS, applyNcclEnv, checkTransportsFit, engineOptionsOf, stateSlotsNote } from './nativeEngine.js';

describe('role flags -> the rank config native reads', () => {
  it('carries topology, rank, hosts, port and deadline from the flags and --config into config.afd', () => {
    const c = resolveRoleConfig('attention', {
      topology: '3A2F',
      rank: '2',
      afdPort: '31000',
      ffnHosts: '10.0.0.1,10.0.0.2',
      config: '{"stepDeadlineMs":1234,"computeGateOnAttention":true}',
    });
    expect(c.afd).toMatchObject({ role: 'attention', topology: resolveTopology('3A2F'), rank: 2, host: '127.0.0.1', ffnHosts: ['10.0.0.1', '10.0.0.2'], port: 31000, stepDeadlineMs: 1234, computeGateOnAttention: true });
  });

  it('takes the rendezvous id of this start, or none', () => {
    expect(resolveRoleConfig('attention', { rendezvousId: '1b4e28ba-2fa1-11d2-883f-0016d3cca427' }).afd.rendezvousId).toBe('1b4e28ba-2fa1-11d2-883f-0016d3cca427');
    expect(resolveRoleConfig('ffn', {}).afd.rendezvousId).toBe('');
    expect(() => resolveRoleConfig('ffn', { rendezvousId: 'a b' })).toThrow(/afd\.rendezvousId: must be at most 128 letters/);
  });

  it('takes the FFN host alone and the connector from the flags', () => {
    const s = resolveRoleConfig('attention', { afdHost: 'ffn.local' });
    expect(s.afd).toMatchObject({ topology: resolveTopology('1A1F'), rank: 0, host: 'ffn.local', port: 29500, stepDeadlineMs: 5000, connector: 'tcp' });
    expect(resolveRoleConfig('attention', { connector: 'nccl' }).afd.connector).toBe('nccl');
    expect(resolveRoleConfig('ffn', { connector: 'nccl', topology: '2A1F' }).afd).toMatchObject({ connector: 'nccl', topology: resolveTopology('2A1F') });
    expect(() => resolveRoleConfig('ffn', { connector: 'ib' })).toThrow(/--connector must be one of tcp, nccl, peer \(got "ib"\)/);
  });
});

describe('the transports a rank runs on fit its backend (connectors.ts)', () => {
  it('refuses a device connector on a CPU rank, naming the fix; colocated ranks use none', () => {
    for (const connector of ['nccl', 'peer']) {
      const c = resolveRoleConfig('attention', { connector });
      expect(() => checkTransportsFit(c, 'cpu')).toThrow(new RegExp(`connector "${connector}" moves GPU memory and needs --backend cuda.*"connector": "tcp"`));
      expect(() => checkTransportsFit(c, 'cuda')).not.toThrow();
      expect(() => checkTransportsFit(resolveRoleConfig('colocated', { connector }), 'cpu')).not.toThrow();
    }
    expect(() => checkTransportsFit(resolveRoleConfig('ffn', {}), 'cpu')).not.toThrow();
  });

  it('refuses a device exchange of expert parallelism on a CPU FFN rank; auto and tcp stay on the host', () => {
    for (const epTransport of ['peer', 'nccl']) {
      const flags = { topology: '2A2F', enableExpertParallel: true, epTransport };
      expect(() => checkTransportsFit(resolveRoleConfig('ffn', flags), 'cpu')).toThrow(new RegExp(`--ep-transport ${epTransport} moves the FFN ranks' GPU memory and needs --backend cuda .*--ep-transport tcp`));
      // Only FFN ranks run the exchange.
      expect(() => checkTransportsFit(resolveRoleConfig('attention', flags), 'cpu')).not.toThrow();
    }
    for (const epTransport of ['auto', 'tcp']) {
      expect(() => checkTransportsFit(resolveRoleConfig('ffn', { topology: '2A2F', enableExpertParallel: true, epTransport }), 'cpu')).not.toThrow();
    }
    expect(() => resolveRoleConfig('ffn', { epTransport: 'ipc' })).toThrow(/--ep-transport must be one of auto, tcp, nccl, peer \(got "ipc"\)/);
  });

  it('exports the config ncclEnv with multicast forced off, only for connector nccl', () => {
    const peerEnv: NodeJS.ProcessEnv = {};
    applyNcclEnv(resolveRoleConfig('ffn', { config: '{"connector":"peer","ncclEnv":{"NCCL_DEBUG":"WARN"}}' }).afd, peerEnv);
    expect(peerEnv).toEqual({});
    const env: NodeJS.ProcessEnv = {};
    applyNcclEnv(resolveRoleConfig('ffn', { config: '{"connector":"tcp"}' }).afd, env);
    expect(env).toEqual({});
    applyNcclEnv(resolveRoleConfig('ffn', { config: '{"connector":"nccl","ncclEnv":{"NCCL_DEBUG":"WARN"}}' }).afd, env);
    expect(env).toMatchObject({ NCCL_DEBUG: 'WARN', NCCL_NVLS_ENABLE: '0' });
    // An FFN rank whose expert exchange runs on NCCL gets it too, under any connector.
    const ep: NodeJS.ProcessEnv = {};
    applyNcclEnv(resolveRoleConfig('ffn', { topology: '2A2F', enableExpertParallel: true, epTransport: 'nccl', config: '{"connector":"peer","ncclEnv":{"NCCL_DEBUG":"INFO"}}' }).afd, ep);
    expect(ep).toEqual({ NCCL_DEBUG: 'INFO', NCCL_NVLS_ENABLE: '0' });
  });
});

describe('the rank config -> engine options', () => {
  it('passes the config cudaGraph policy and buckets to the engine (decode-only by default, colocated too)', () => {
    expect(engineOptionsOf(resolveRoleConfig('colocated', {}), 'cpu')).toMatchObject({ graphPolicy: 'decode-only', graphBatchBuckets: [1, 2, 4, 8, 16, 32, 64, 128] });
    const s = resolveRoleConfig('attention', { config: '{"cudaGraph":{"policy":"off","batchBuckets":[1,3,8]}}' });
    expect(engineOptionsOf(s, 'cuda')).toMatchObject({ graphPolicy: 'off', graphBatchBuckets: [1, 3, 8] });
    expect(() => resolveRoleConfig('attention', { config: '{"cudaGraph":{"batchBuckets":[4,2]}}' })).toThrow(/strictly ascending/);
  });

  it('gives the engine one recurrent-state slot per sequence that may run (--max-num-seqs, capped at the engine\'s most)', () => {
    expect(engineOptionsOf(resolveRoleConfig('colocated', {}), 'cpu')).toMatchObject({ numStateSlots: 64 });
    expect(engineOptionsOf(resolveRoleConfig('attention', { maxNumSeqs: '256' }), 'cuda')).toMatchObject({ numStateSlots: 256 });
    expect(engineOptionsOf(resolveRoleConfig('colocated', { maxNumSeqs: String(1 << 20) }), 'cuda')).toMatchObject({ numStateSlots: MAX_STATE_SLOTS });
    expect(stateSlotsNote({ numStateSlots: 0, stateBytesPerSlot: 0 })).toBe('');
    expect(stateSlotsNote({ numStateSlots: 64, stateBytesPerSlot: 3 * 2 ** 20 })).toBe(', 64 recurrent-state slots x 3.00 MiB');
  });

  it('passes backend, device, threads and KV block size', () => {
    const c = resolveRoleConfig('colocated', { device: '1', threads: '3', kvBlockSize: '32' });
    expect(engineOptionsOf(c, 'cuda')).toMatchObject({ backend: 'cuda', deviceIndex: 1, threads: 3, kvBlockSize: 32 });
  });
});

describe('KV cache sizing of the role engine', () => {
  it('takes a share of free device memory on CUDA unless --kv-cache-mib fixes the budget', () => {
    const sizing = (flags: Record<string, string>, backend: 'cpu' | 'cuda') => kvCacheSizing(resolveRoleConfig('colocated', flags).serving, backend);
    expect(sizing({}, 'cuda')).toEqual({ kvCacheBytes: 256 * 2 ** 20, kvMemoryFraction: DEFAULT_KV_MEMORY_FRACTION });
    expect(sizing({ kvMemoryFraction: '0.5' }, 'cuda')).toEqual({ kvCacheBytes: 256 * 2 ** 20, kvMemoryFraction: 0.5 });
    expect(sizing({ kvCacheMib: '1024' }, 'cuda')).toEqual({ kvCacheBytes: 1024 * 2 ** 20 });
    expect(sizing({}, 'cpu')).toEqual({ kvCacheBytes: 256 * 2 ** 20 });
    expect(engineOptionsOf(resolveRoleConfig('colocated', { kvCacheMib: '1024' }), 'cuda')).toMatchObject({ kvCacheBytes: 1024 * 2 ** 20 });
    expect(() => resolveRoleConfig('colocated', { kvCacheMib: '1024', kvMemoryFraction: '0.5' })).toThrow(/serving\.kvMemoryFraction: give kvCacheMib or kvMemoryFraction, not both/);
  });

  it('parses --kv-memory-fraction and rejects values outside (0, 0.99]', () => {
    expect(resolveRoleConfig('colocated', { kvMemoryFraction: '0.8' }).serving.kvMemoryFraction).toBe(0.8);
    expect(resolveRoleConfig('colocated', {}).serving.kvMemoryFraction).toBeNull();
    expect(() => resolveRoleConfig('colocated', { kvMemoryFraction: '1' })).toThrow(/--kv-memory-fraction must be a number in \(0, 0.99\]/);
    expect(() => resolveRoleConfig('colocated', { kvMemoryFraction: 'x' })).toThrow(/--kv-memory-fraction/);
  });
});
