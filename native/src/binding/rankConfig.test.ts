/**
 * The one binding conversion of the rank config (binding/rank-config.cc): what native
 * reads from each field, the values it derives (device-buffer rows, FFN graphs), the enums
 * it parses, and the last guard's errors for a raw config. Through the testing addon's
 * linkOptionsOf, so no GPU is needed.
 */
import { describe, expect, it } from 'vitest';
import { resolveRankConfig, type RankConfig } from '@afd/shared';
import { loadTestingAddon } from '../testing/testingAddon.js';

const read = (config: RankConfig) => loadTestingAddon().linkOptionsOf(config);

describe('native reads the rank config', () => {
  it('takes every afd field the link needs, by its name in the config', () => {
    const config = resolveRankConfig({
      afd: { role: 'ffn', rank: 1, topology: '3A2F', host: 'h0', ffnHosts: ['h0', 'h1'], listenHost: '0.0.0.0', port: 31000, stepDeadlineMs: 1234, rendezvousTimeoutMs: 777, rendezvousId: 'start-9', connector: 'nccl', enableExpertParallel: true, epTransport: 'peer' },
    });
    expect(read(config)).toEqual({
      numAttention: 3, numFfn: 2, rank: 1, host: 'h0', ffnHosts: ['h0', 'h1'], listenHost: '0.0.0.0', basePort: 31000, stepDeadlineMs: 1234,
      rendezvousTimeoutMs: 777, rendezvousId: 'start-9', connector: 'nccl', expertParallel: true, epTransport: 'peer', ffnGraphs: true, maxStepTokens: 2048,
    });
  });

  it('sizes device buffers from the step budget, at least the largest graph bucket (a graph step pads a stage to its bucket)', () => {
    expect(read(resolveRankConfig({ serving: { maxNumBatchedTokens: 4096 } })).maxStepTokens).toBe(4096);
    expect(read(resolveRankConfig({ serving: { maxNumBatchedTokens: 100 } })).maxStepTokens).toBe(128);
    expect(read(resolveRankConfig({ serving: { maxNumBatchedTokens: 100 }, afd: { cudaGraph: { batchBuckets: [1, 2, 512] } } })).maxStepTokens).toBe(512);
  });

  it('keeps an FFN rank eager when its cudaGraph policy is off, and takes auto as the runtime\'s choice', () => {
    expect(read(resolveRankConfig({ afd: { cudaGraph: { policy: 'off' } } })).ffnGraphs).toBe(false);
    expect(read(resolveRankConfig({})).epTransport).toBeNull();
    expect(read(resolveRankConfig({ afd: { epTransport: 'tcp' } })).epTransport).toBe('tcp');
  });

  it('refuses a raw config that skipped the schema, naming the field', () => {
    const valid = resolveRankConfig({});
    expect(() => read({ ...valid, afd: { ...valid.afd, connector: 'ib' as 'tcp' } })).toThrow(/linkOptionsOf\(config\): config\.afd\.connector must be one of "tcp", "nccl", "peer" \(got "ib"\)/);
    expect(() => read({ ...valid, afd: { ...valid.afd, epTransport: 'x' as 'tcp' } })).toThrow(/config\.afd\.epTransport must be one of "auto", "tcp", "peer", "nccl"/);
    expect(() => read({ ...valid, afd: { ...valid.afd, port: 70000 } })).toThrow(/config\.afd\.port must be an integer in \[0, 65535\]/);
    expect(() => read({ ...valid, serving: undefined } as unknown as RankConfig)).toThrow(/config\.serving must be an object/);
    expect(() => read({ ...valid, afd: { ...valid.afd, cudaGraph: { ...valid.afd.cudaGraph, batchBuckets: [1.5] } } })).toThrow(/config\.afd\.cudaGraph\.batchBuckets must be an array of integers/);
  });
});
