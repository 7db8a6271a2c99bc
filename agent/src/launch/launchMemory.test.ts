/**
 * checkLaunchFitsHost: the KV caches of an agent's CPU serving ranks, together, against a
 * given host; FFN ranks, CUDA ranks and other agents' ranks do not count.
 */
import { describe, expect, it } from 'vitest';
import { launchSpecSchema } from '@afd/shared';
import { checkLaunchFitsHost } from './launchMemory.js';

const GiB = 2 ** 30;
const host = { availableBytes: 20 * GiB, source: 'MemAvailable in /proc/meminfo' };

function afdSpec(kvCacheMib: number | undefined, attentionBackend: 'cpu' | 'cuda' = 'cpu') {
  return launchSpecSchema.parse({
    mode: 'afd',
    topology: '2A1F',
    placements: [
      { role: 'ffn', rank: 0, agentId: 'a', backend: 'cpu' },
      { role: 'attention', rank: 0, agentId: 'a', backend: attentionBackend },
      { role: 'attention', rank: 1, agentId: 'a', backend: attentionBackend },
    ],
    serving: kvCacheMib === undefined ? {} : { kvCacheMib },
  });
}

describe('checkLaunchFitsHost', () => {
  it('adds up the KV caches of every local CPU serving rank and says the most per rank that fits', () => {
    const spec = afdSpec(12 * 1024);
    expect(() => checkLaunchFitsHost(spec, spec.placements, 'a', host)).toThrow(
      '--kv-cache-mib 12288 (serving.kvCacheMib) x 2 CPU ranks on agent "a" (attention 0, attention 1) would take 24.00 GiB of host memory, ' +
        'but this host has 20.00 GiB available (MemAvailable in /proc/meminfo); give --kv-cache-mib 10240 or less (per rank), or place ranks on other agents',
    );
    // One of them here, the other on another agent: it fits.
    expect(() => checkLaunchFitsHost(spec, spec.placements.filter((p) => p.rank === 0), 'a', host)).not.toThrow();
  });

  it('names a single rank, and the default budget when none was given', () => {
    const spec = afdSpec(16_000_000);
    expect(() => checkLaunchFitsHost(spec, spec.placements.filter((p) => p.role !== 'attention' || p.rank === 1), 'a', host)).toThrow(
      /^--kv-cache-mib 16000000 \(serving\.kvCacheMib\) of attention 1 on agent "a" would take 15625\.00 GiB of host memory, but .*; give --kv-cache-mib 20480 or less, or place ranks on other agents$/,
    );
    const tiny = { availableBytes: 100 * 2 ** 20, source: 'a cgroup' };
    expect(() => checkLaunchFitsHost(afdSpec(undefined), afdSpec(undefined).placements, 'a', tiny)).toThrow(/^the CPU's default KV cache \(serving\.kvCacheMib 256\) x 2 CPU ranks/);
  });

  it('does not count CUDA ranks (their KV cache is on the device) and checks nothing on an unknown host', () => {
    const spec = afdSpec(16_000_000, 'cuda');
    expect(() => checkLaunchFitsHost(spec, spec.placements, 'a', host)).not.toThrow();
    expect(() => checkLaunchFitsHost(afdSpec(16_000_000), afdSpec(16_000_000).placements, 'a', null)).not.toThrow();
  });
});
