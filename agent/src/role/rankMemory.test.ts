/**
 * checkRankFitsHost and the message it gives: KV cache and weights against a given host,
 * the largest --kv-cache-mib that fits, the default budget named as such, FFN ranks
 * (weights only), CUDA ranks and an unknown host (not checked).
 */
import { describe, expect, it } from 'vitest';
import { resolveRankConfig } from '@afd/shared';
import { checkRankFitsHost } from './rankMemory.js';

const GiB = 2 ** 30;
const MiB = 2 ** 20;
const host = { availableBytes: 20 * GiB, source: 'MemAvailable in /proc/meminfo' };
const configWith = (kvCacheMib: number | null) => resolveRankConfig({ serving: { kvCacheMib }, device: { backend: 'cpu' } });

describe('checkRankFitsHost', () => {
  it('refuses a KV cache the host cannot hold, naming the option, the sizes, the limit and its source, and the most that fits', () => {
    const check = (): void => checkRankFitsHost({ config: configWith(16_000_000), role: 'colocated', backend: 'cpu', weightsBytes: 2 * GiB, host });
    expect(check).toThrow(
      '--kv-cache-mib 16000000 (15625.00 GiB) and the colocated rank\'s weights (2.00 GiB) would take 15627.00 GiB of host memory, ' +
        'but this host has 20.00 GiB available (MemAvailable in /proc/meminfo); give --kv-cache-mib 18432 or less',
    );
  });

  it('lets through what fits, to the byte', () => {
    expect(() => checkRankFitsHost({ config: configWith(18 * 1024), role: 'attention', backend: 'cpu', weightsBytes: 2 * GiB, host })).not.toThrow();
    expect(() => checkRankFitsHost({ config: configWith(18 * 1024 + 1), role: 'attention', backend: 'cpu', weightsBytes: 2 * GiB, host })).toThrow(/give --kv-cache-mib 18432 or less/);
  });

  it('names the CPU default when no --kv-cache-mib was given', () => {
    const small = { availableBytes: 300 * MiB, source: 'the cgroup memory limit in /sys/fs/cgroup/memory.max: 0.50 GiB, of which 0.21 GiB in use' };
    expect(() => checkRankFitsHost({ config: configWith(null), role: 'colocated', backend: 'cpu', weightsBytes: 100 * MiB, host: small })).toThrow(
      /^the CPU's default KV cache \(--kv-cache-mib 256\) \(0\.25 GiB\) and .* \(the cgroup memory limit in \/sys\/fs\/cgroup\/memory\.max: .*\); give --kv-cache-mib 200 or less$/,
    );
  });

  it('an FFN rank holds its weights only; weights that do not fit say what to do instead', () => {
    expect(() => checkRankFitsHost({ config: configWith(16_000_000), role: 'ffn', backend: 'cpu', weightsBytes: 19 * GiB, host })).not.toThrow();
    expect(() => checkRankFitsHost({ config: configWith(null), role: 'ffn', backend: 'cpu', weightsBytes: 21 * GiB, host })).toThrow(
      "the ffn rank's weights would take 21.00 GiB of host memory, but this host has 20.00 GiB available (MemAvailable in /proc/meminfo); the weights do not fit: serve a smaller model, split the experts over more FFN ranks (--enable-expert-parallel), run on a host with more memory, or use --backend cuda",
    );
    expect(() => checkRankFitsHost({ config: configWith(1), role: 'attention', backend: 'cpu', weightsBytes: 20 * GiB, host })).toThrow(/the weights leave no room for a KV cache: serve a smaller model, run on/);
  });

  it('leaves CUDA ranks to the device check, and checks nothing when the host is unknown', () => {
    expect(() => checkRankFitsHost({ config: configWith(16_000_000), role: 'colocated', backend: 'cuda', weightsBytes: 0, host })).not.toThrow();
    expect(() => checkRankFitsHost({ config: configWith(16_000_000), role: 'colocated', backend: 'cpu', weightsBytes: 0, host: null })).not.toThrow();
  });
});
