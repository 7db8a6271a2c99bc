import { describe, expect, it } from 'vitest';
import { buildCliLaunchSpec, type CliLaunchInput } from './cliSpec.js';

const local = { agentId: 'local', address: '127.0.0.1', gpus: [0, 1, 2, 3] };
const base: CliLaunchInput = { topology: '2A2F', backend: 'cpu', hosts: [local], config: { model: { dir: '/m' } } };
/** base with these AFD options (what --connector, --dbo ... give). */
const afd = (options: NonNullable<CliLaunchInput['config']['afd']>, over: Partial<CliLaunchInput> = {}): CliLaunchInput => ({ ...base, ...over, config: { ...base.config, afd: options } });

describe('buildCliLaunchSpec', () => {
  it('places every rank of 2A2F on one CPU host with the tcp connector', () => {
    const spec = buildCliLaunchSpec(base);
    expect(spec.mode).toBe('afd');
    expect(spec.placements.map((p) => `${p.role}${p.rank}@${p.agentId}`)).toEqual(['ffn0@local', 'ffn1@local', 'attention0@local', 'attention1@local']);
    expect(spec.mode === 'afd' && spec.afd.connector).toBe('tcp');
    expect(spec.mode === 'afd' && spec.agentHosts).toEqual({});
  });

  it('restarts dead ranks by default, or never; carries the serving limits; refuses a relative model path', () => {
    const spec = buildCliLaunchSpec(base);
    expect(spec.restart).toMatchObject({ policy: 'on-failure', maxRestarts: 10 });
    expect(buildCliLaunchSpec({ ...base, config: { restart: { policy: 'never', maxRestarts: 2 } } }).restart).toMatchObject({ policy: 'never', maxRestarts: 2 });
    expect(buildCliLaunchSpec({ ...base, config: { serving: { maxNumSeqs: 4, kvCacheMib: 32 } } }).serving).toMatchObject({ maxNumSeqs: 4, kvCacheMib: 32, maxNumBatchedTokens: 2048 });
    expect(() => buildCliLaunchSpec({ ...base, config: { serving: { kvCacheMib: 32, kvMemoryFraction: 0.5 } } })).toThrow(/serving.kvMemoryFraction: give kvCacheMib or kvMemoryFraction, not both/);
    expect(() => buildCliLaunchSpec({ ...base, config: { model: { dir: 'models/q' } } })).toThrow(/model.dir: must be an absolute path/);
  });

  it('gives each rank its own GPU and uses NCCL on CUDA', () => {
    const spec = buildCliLaunchSpec(afd({ dbo: { enabled: true }, computeGateOnAttention: true }, { backend: 'cuda' }));
    expect(spec.placements.map((p) => p.deviceIndex)).toEqual([0, 1, 2, 3]);
    expect(spec.mode === 'afd' && spec.afd).toMatchObject({ connector: 'nccl', dbo: { enabled: true }, computeGateOnAttention: true });
  });

  it('takes connector peer on one CUDA host and refuses it across hosts or on cpu', () => {
    const spec = buildCliLaunchSpec(afd({ connector: 'peer' }, { topology: '1A1F', backend: 'cuda' }));
    expect(spec.mode === 'afd' && spec.afd.connector).toBe('peer');
    const twoHosts = [local, { agentId: 'gpu2', address: '10.0.0.2', gpus: [0, 1] }];
    // The launch spec schema holds the rule; the CLI reports its message.
    expect(() => buildCliLaunchSpec(afd({ connector: 'peer' }, { backend: 'cuda', hosts: twoHosts }))).toThrow(/afd.connector: connector peer \(CUDA IPC\) needs every rank on one host .*use connector nccl across hosts/);
    expect(() => buildCliLaunchSpec(afd({ connector: 'peer' }))).toThrow(/afd.connector: connector peer needs every rank on a CUDA device .*use connector tcp for CPU ranks/);
  });

  it('turns on expert parallelism for the FFN group (off by default)', () => {
    expect(buildCliLaunchSpec(base).mode === 'afd' && buildCliLaunchSpec(base)).toMatchObject({ afd: { enableExpertParallel: false } });
    const spec = buildCliLaunchSpec(afd({ enableExpertParallel: true }, { topology: '4A2F' }));
    expect(spec.mode === 'afd' && spec.afd.enableExpertParallel).toBe(true);
  });

  it('carries --ep-transport (auto by default) and refuses peer for FFN ranks on cpu or across hosts', () => {
    expect(buildCliLaunchSpec(afd({ enableExpertParallel: true }))).toMatchObject({ afd: { epTransport: 'auto' } });
    const spec = buildCliLaunchSpec(afd({ enableExpertParallel: true, epTransport: 'peer' }, { backend: 'cuda' }));
    expect(spec).toMatchObject({ afd: { enableExpertParallel: true, epTransport: 'peer' } });
    expect(() => buildCliLaunchSpec(afd({ enableExpertParallel: true, epTransport: 'peer' }))).toThrow(/afd.epTransport: epTransport peer needs every FFN rank on a CUDA device/);
    const twoHosts = [local, { agentId: 'gpu2', address: '10.0.0.2', gpus: [0, 1] }];
    expect(() => buildCliLaunchSpec(afd({ enableExpertParallel: true, epTransport: 'peer' }, { backend: 'cuda', hosts: twoHosts, placement: 'block' }))).toThrow(
      /afd.epTransport: epTransport peer \(CUDA IPC\) needs every FFN rank on one host .*use epTransport nccl or tcp across hosts/,
    );
    expect(buildCliLaunchSpec(afd({ enableExpertParallel: true, epTransport: 'tcp' }, { backend: 'cuda', hosts: twoHosts, placement: 'block' }))).toMatchObject({ afd: { epTransport: 'tcp' } });
  });

  it('shares a host\'s GPUs round-robin when it has fewer than ranks, over connector peer unless told', () => {
    const one = { ...local, gpus: [0] };
    const spec = buildCliLaunchSpec({ ...base, topology: '1A1F', backend: 'cuda', hosts: [one] });
    expect(spec.placements.map((p) => `${p.role}${p.rank}:${p.deviceIndex}`)).toEqual(['ffn0:0', 'attention0:0']);
    expect(spec.mode === 'afd' && spec.afd.connector).toBe('peer');
    expect(spec.gpuSharing).toEqual({ mode: 'auto', smShare: {} });
    const eight = buildCliLaunchSpec({ ...base, topology: '4A4F', backend: 'cuda' });
    expect(eight.placements.map((p) => p.deviceIndex)).toEqual([0, 1, 2, 3, 0, 1, 2, 3]);
    expect(buildCliLaunchSpec(afd({ connector: 'tcp' }, { topology: '1A1F', backend: 'cuda', hosts: [one] }))).toMatchObject({ afd: { connector: 'tcp' } });
    expect(() => buildCliLaunchSpec(afd({ connector: 'nccl' }, { topology: '1A1F', backend: 'cuda', hosts: [one] }))).toThrow(/afd.connector: connector nccl needs an attention rank and its FFN rank on different GPUs \(attention 0 and ffn 0 are both on local GPU 0/);
    expect(() => buildCliLaunchSpec({ ...base, backend: 'cuda', hosts: [{ ...local, gpus: [] }] })).toThrow(/host local has no GPU for its ranks; use --backend cpu/);
  });

  it('carries --gpu-sharing and --sm-share into the spec', () => {
    const spec = buildCliLaunchSpec({ ...base, topology: '1A1F', backend: 'cuda', hosts: [{ ...local, gpus: [0] }], config: { gpuSharing: { mode: 'mps', smShare: { attention: 40, ffn: 60 } } } });
    expect(spec.gpuSharing).toEqual({ mode: 'mps', smShare: { attention: 40, ffn: 60 } });
    expect(() => buildCliLaunchSpec({ ...base, config: { gpuSharing: { mode: 'time-slice', smShare: { ffn: 60 } } } })).toThrow(/gpuSharing.smShare: SM shares \(role ffn\) need MPS/);
  });

  it('spreads ranks over hosts in world order and records their addresses', () => {
    const spec = buildCliLaunchSpec({ ...base, backend: 'cuda', hosts: [local, { agentId: 'gpu2', address: '10.0.0.2', gpus: [0, 1] }] });
    expect(spec.placements.map((p) => `${p.role}${p.rank}@${p.agentId}:${p.deviceIndex}`)).toEqual(['ffn0@local:0', 'ffn1@local:1', 'attention0@gpu2:0', 'attention1@gpu2:1']);
    expect(spec.mode === 'afd' && spec.agentHosts).toEqual({ local: '127.0.0.1', gpu2: '10.0.0.2' });
  });

  it('builds colocated replicas and rejects invalid topologies with the rule', () => {
    const spec = buildCliLaunchSpec({ ...base, topology: 'colocated:2' });
    expect(spec.mode).toBe('colocated');
    expect(spec.placements.map((p) => p.role)).toEqual(['colocated', 'colocated']);
    expect(() => buildCliLaunchSpec({ ...base, topology: '1A2F' })).toThrow(/attention-ge-ffn/);
  });

  it('keeps each block on one host with --placement block, and refuses more hosts than blocks', () => {
    const hosts = [
      { agentId: 'host-a', address: 'host-a', gpus: [0, 1] },
      { agentId: 'host-b', address: 'host-b', gpus: [0, 1] },
    ];
    const spec = buildCliLaunchSpec({ ...base, backend: 'cuda', hosts, placement: 'block' });
    expect(spec.placements.map((p) => `${p.role}${p.rank}@${p.agentId}:${p.deviceIndex}`)).toEqual(['ffn0@host-a:0', 'ffn1@host-b:0', 'attention0@host-a:1', 'attention1@host-b:1']);
    expect(spec.mode === 'afd' && spec.agentHosts).toEqual({ 'host-a': 'host-a', 'host-b': 'host-b' });
    // 4A2F: blocks {F0, A0, A1} and {F1, A2, A3}.
    const four = buildCliLaunchSpec({ ...base, topology: '4A2F', hosts, placement: 'block' });
    expect(four.placements.filter((p) => p.agentId === 'host-a').map((p) => `${p.role}${p.rank}`)).toEqual(['ffn0', 'attention0', 'attention1']);
    expect(() => buildCliLaunchSpec({ ...base, topology: '2A1F', hosts, placement: 'block' })).toThrow(/2A1F has 1 block\(s\) for 2 hosts; give at most 1 --hosts, or use --placement world/);
  });

  it('carries the step deadline into the AFD options', () => {
    const spec = buildCliLaunchSpec(afd({ stepDeadlineMs: 3000 }));
    expect(spec.mode === 'afd' && spec.afd.stepDeadlineMs).toBe(3000);
    expect(buildCliLaunchSpec(base).mode === 'afd' && (buildCliLaunchSpec(base) as { afd: { stepDeadlineMs: number } }).afd.stepDeadlineMs).toBe(5000);
  });
});
