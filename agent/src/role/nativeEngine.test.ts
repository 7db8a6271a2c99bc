import { describe, expect, it } from 'vitest';
import { resolveTopology } from '@afd/shared';
import { resolveRoleSettings } from './roleSettings.js';
import { afdLinkOptions, applyNcclEnv, DEFAULT_KV_MEMORY_FRACTION, engineGraphOptions, kvCacheOptions } from './nativeEngine.js';

describe('AFD options -> native link options', () => {
  it('passes topology, rank, hosts, port and deadline straight from the shared config', () => {
    const s = resolveRoleSettings('attention', {
      topology: '3A2F',
      rank: '2',
      afdPort: '31000',
      ffnHosts: '10.0.0.1,10.0.0.2',
      config: '{"stepDeadlineMs":1234,"computeGateOnAttention":true}',
    });
    expect(afdLinkOptions(s.afd)).toEqual({ topology: resolveTopology('3A2F'), rank: 2, host: '127.0.0.1', ffnHosts: ['10.0.0.1', '10.0.0.2'], basePort: 31000, stepDeadlineMs: 1234 });
    expect(s.afd.computeGateOnAttention).toBe(true);
  });

  it('passes --rendezvous-id to the native link and refuses an id that is not a plain token', () => {
    const s = resolveRoleSettings('ffn', { rendezvousId: '1b4e28ba-2fa1-11d2-883f-0016d3cca427' });
    expect(afdLinkOptions(s.afd, 'cpu', s.rendezvousId)).toMatchObject({ rendezvousId: '1b4e28ba-2fa1-11d2-883f-0016d3cca427' });
    expect(afdLinkOptions(resolveRoleSettings('ffn', {}).afd, 'cpu', '')).not.toHaveProperty('rendezvousId');
    expect(() => resolveRoleSettings('ffn', { rendezvousId: 'a b' })).toThrow(/--rendezvous-id must be at most 128 letters/);
  });

  it('omits ffnHosts when every FFN rank is at --afd-host', () => {
    const s = resolveRoleSettings('ffn', { afdHost: 'ffn.local' });
    expect(afdLinkOptions(s.afd)).toEqual({ topology: resolveTopology('1A1F'), rank: 0, host: 'ffn.local', basePort: 29500, stepDeadlineMs: 5000 });
  });

  it('passes connector nccl (config or --connector) to the native link', () => {
    const s = resolveRoleSettings('attention', { config: '{"connector":"nccl"}' });
    expect(afdLinkOptions(s.afd, 'cuda')).toMatchObject({ connector: 'nccl', topology: resolveTopology('1A1F') });
    const f = resolveRoleSettings('ffn', { connector: 'nccl', topology: '2A1F' });
    expect(afdLinkOptions(f.afd, 'cuda')).toMatchObject({ connector: 'nccl', topology: resolveTopology('2A1F') });
  });

  it('refuses connector nccl on the cpu backend and a bad --connector, saying what to set', () => {
    const s = resolveRoleSettings('attention', { config: '{"connector":"nccl"}' });
    expect(() => afdLinkOptions(s.afd, 'cpu')).toThrow(/needs --backend cuda.*"connector": "tcp"/);
    expect(() => resolveRoleSettings('ffn', { connector: 'ib' })).toThrow(/--connector must be tcp, nccl, peer/);
  });

  it('passes connector peer and the step token budget that sizes its inboxes', () => {
    const f = resolveRoleSettings('ffn', { connector: 'peer', maxNumBatchedTokens: '4096' });
    expect(f.afd.connector).toBe('peer');
    expect(afdLinkOptions(f.afd, 'cuda', '', f.serving.scheduler.maxNumBatchedTokens)).toMatchObject({ connector: 'peer', maxStepTokens: 4096 });
    // Only connector peer needs the budget; nccl and tcp leave the native default alone.
    const n = resolveRoleSettings('ffn', { connector: 'nccl' });
    expect(afdLinkOptions(n.afd, 'cuda', '', 2048)).not.toHaveProperty('maxStepTokens');
    // A graph step pads a stage to its bucket: the inboxes hold the largest bucket (128) at least.
    expect(afdLinkOptions(f.afd, 'cuda', '', 100)).toMatchObject({ maxStepTokens: 128 });
    expect(() => afdLinkOptions(f.afd, 'cpu', '', 2048)).toThrow(/connector "peer" moves GPU memory and needs --backend cuda/);
  });

  it('passes --ep-transport when it is not auto, and the step token budget under a peer exchange', () => {
    const ep = { topology: '2A2F', enableExpertParallel: true, maxNumBatchedTokens: '4096' };
    const auto = resolveRoleSettings('ffn', ep);
    expect(afdLinkOptions(auto.afd, 'cuda', '', 4096)).toMatchObject({ expertParallel: true });
    expect(afdLinkOptions(auto.afd, 'cuda', '', 4096)).not.toHaveProperty('epTransport');
    expect(afdLinkOptions(auto.afd, 'cuda', '', 4096)).not.toHaveProperty('maxStepTokens'); // auto over connector tcp: the TCP mesh
    const peer = resolveRoleSettings('ffn', { ...ep, epTransport: 'peer' });
    expect(afdLinkOptions(peer.afd, 'cuda', '', peer.serving.scheduler.maxNumBatchedTokens)).toMatchObject({ expertParallel: true, epTransport: 'peer', maxStepTokens: 4096 });
    expect(afdLinkOptions(peer.afd, 'cuda', '', 100)).toMatchObject({ maxStepTokens: 128 }); // at least the largest graph bucket
    // auto under connector peer resolves to peer: the budget travels (as it does for the connector).
    const autoPeer = resolveRoleSettings('ffn', { ...ep, connector: 'peer' });
    expect(afdLinkOptions(autoPeer.afd, 'cuda', '', 4096)).toMatchObject({ connector: 'peer', maxStepTokens: 4096 });
    expect(afdLinkOptions(autoPeer.afd, 'cuda', '', 4096)).not.toHaveProperty('epTransport');
    const tcp = resolveRoleSettings('ffn', { ...ep, epTransport: 'tcp' });
    expect(afdLinkOptions(tcp.afd, 'cpu', '', 4096)).toMatchObject({ epTransport: 'tcp' });
    expect(afdLinkOptions(tcp.afd, 'cpu', '', 4096)).not.toHaveProperty('maxStepTokens');
    // nccl, asked or by auto under connector nccl, sizes its device sections from the budget too.
    const nccl = resolveRoleSettings('ffn', { ...ep, epTransport: 'nccl' });
    expect(afdLinkOptions(nccl.afd, 'cuda', '', 4096)).toMatchObject({ expertParallel: true, epTransport: 'nccl', maxStepTokens: 4096 });
    const autoNccl = resolveRoleSettings('ffn', { ...ep, connector: 'nccl' });
    expect(afdLinkOptions(autoNccl.afd, 'cuda', '', 4096)).toMatchObject({ connector: 'nccl', maxStepTokens: 4096 });
    expect(afdLinkOptions(resolveRoleSettings('ffn', { connector: 'nccl' }).afd, 'cuda', '', 4096)).not.toHaveProperty('maxStepTokens');
    // Without expert parallelism epTransport peer has no exchange to size.
    expect(afdLinkOptions(resolveRoleSettings('ffn', { epTransport: 'peer' }).afd, 'cuda', '', 4096)).not.toHaveProperty('maxStepTokens');
  });

  it('refuses --ep-transport peer on an FFN rank on cpu, saying what to set (attention ranks on cpu may use it)', () => {
    const peer = { topology: '2A2F', enableExpertParallel: true, epTransport: 'peer' };
    expect(() => afdLinkOptions(resolveRoleSettings('ffn', peer).afd, 'cpu')).toThrow(/--ep-transport peer .* needs --backend cuda .*--ep-transport tcp/);
    expect(afdLinkOptions(resolveRoleSettings('attention', peer).afd, 'cpu')).toMatchObject({ epTransport: 'peer' });
    const nccl = { ...peer, epTransport: 'nccl' };
    expect(() => afdLinkOptions(resolveRoleSettings('ffn', nccl).afd, 'cpu')).toThrow(/--ep-transport nccl moves the FFN ranks' GPU memory and needs --backend cuda .*--ep-transport tcp/);
  });

  it('passes the config cudaGraph policy and buckets to the engine (decode-only by default, colocated too)', () => {
    expect(engineGraphOptions(resolveRoleSettings('colocated', {}).afd)).toEqual({ graphPolicy: 'decode-only', graphBatchBuckets: [1, 2, 4, 8, 16, 32, 64, 128] });
    const s = resolveRoleSettings('attention', { config: '{"cudaGraph":{"policy":"off","batchBuckets":[1,3,8]}}' });
    expect(engineGraphOptions(s.afd)).toEqual({ graphPolicy: 'off', graphBatchBuckets: [1, 3, 8] });
    expect(() => resolveRoleSettings('attention', { config: '{"cudaGraph":{"batchBuckets":[4,2]}}' })).toThrow(/strictly ascending/);
  });

  it('keeps an FFN rank eager when its own cudaGraph policy is off (graphs stay on by default)', () => {
    expect(afdLinkOptions(resolveRoleSettings('ffn', {}).afd)).not.toHaveProperty('ffnGraphs');
    const f = resolveRoleSettings('ffn', { config: '{"cudaGraph":{"policy":"off"}}' });
    expect(afdLinkOptions(f.afd)).toMatchObject({ ffnGraphs: false });
  });

  it('exports the config ncclEnv with multicast forced off, only for connector nccl', () => {
    const peerEnv: NodeJS.ProcessEnv = {};
    applyNcclEnv(resolveRoleSettings('ffn', { config: '{"connector":"peer","ncclEnv":{"NCCL_DEBUG":"WARN"}}' }).afd, peerEnv);
    expect(peerEnv).toEqual({});
    const env: NodeJS.ProcessEnv = {};
    applyNcclEnv(resolveRoleSettings('ffn', { config: '{"connector":"tcp"}' }).afd, env);
    expect(env).toEqual({});
    applyNcclEnv(resolveRoleSettings('ffn', { config: '{"connector":"nccl","ncclEnv":{"NCCL_DEBUG":"WARN"}}' }).afd, env);
    expect(env).toMatchObject({ NCCL_DEBUG: 'WARN', NCCL_NVLS_ENABLE: '0' });
  });
});

describe('KV cache sizing of the role engine', () => {
  it('takes a share of free device memory on CUDA unless --kv-cache-mib fixes the budget', () => {
    expect(kvCacheOptions('cuda', undefined, undefined)).toEqual({ kvCacheBytes: 256 * 2 ** 20, kvMemoryFraction: DEFAULT_KV_MEMORY_FRACTION });
    expect(kvCacheOptions('cuda', undefined, 0.5)).toEqual({ kvCacheBytes: 256 * 2 ** 20, kvMemoryFraction: 0.5 });
    expect(kvCacheOptions('cuda', 1024, undefined)).toEqual({ kvCacheBytes: 1024 * 2 ** 20 });
    expect(kvCacheOptions('cpu', undefined, undefined)).toEqual({ kvCacheBytes: 256 * 2 ** 20 });
    expect(() => kvCacheOptions('cuda', 1024, 0.5)).toThrow(/give one of them/);
  });
  it('parses --kv-memory-fraction and rejects values outside (0, 0.99]', () => {
    expect(resolveRoleSettings('colocated', { kvMemoryFraction: '0.8' }).kvMemoryFraction).toBe(0.8);
    expect(resolveRoleSettings('colocated', {}).kvMemoryFraction).toBeUndefined();
    expect(() => resolveRoleSettings('colocated', { kvMemoryFraction: '1' })).toThrow(/--kv-memory-fraction must be a number in \(0, 0.99\]/);
    expect(() => resolveRoleSettings('colocated', { kvMemoryFraction: 'x' })).toThrow(/--kv-memory-fraction/);
  });
});
