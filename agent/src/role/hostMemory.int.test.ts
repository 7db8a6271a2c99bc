/**
 * A real colocated role process on the CPU with a KV cache no host holds: it fails at
 * start, before the engine allocates, with the message naming --kv-cache-mib, the size,
 * the host's limit and its source, and exits non-zero within seconds, its resident memory
 * never growing past what loading the program takes.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { testAddonBuilt } from '../testing/agentBundle.js';
import { killAllRoles, RoleProcess } from '../testing/RoleProcess.js';

/** VmRSS of a live process in bytes; 0 once it is gone. */
function rssBytes(pid: number): number {
  try {
    const m = /^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) * 1024 : 0;
  } catch {
    return 0;
  }
}

describe.skipIf(!testAddonBuilt() || process.platform !== 'linux')('a KV cache larger than the host (real role process)', () => {
  const home = mkdtempSync(join(tmpdir(), 'afd-home-'));
  afterAll(async () => {
    await killAllRoles();
    rmSync(home, { recursive: true, force: true });
  });

  it('is refused at start: failed event naming the option and the limit, exit 1, no memory growth', async () => {
    const t0 = Date.now();
    const role = await RoleProcess.start({ role: 'colocated', home, kvCacheMib: 16_000_000, env: { CUDA_VISIBLE_DEVICES: '' } });
    let peakRss = 0;
    const sampler = setInterval(() => (peakRss = Math.max(peakRss, rssBytes(role.pid!))), 20);
    const exit = await role.exited;
    clearInterval(sampler);
    const seconds = (Date.now() - t0) / 1000;
    expect(exit.code, role.describe()).toBe(1);
    const failed = role.events.find((e) => e.type === 'failed');
    expect(failed && 'message' in failed ? failed.message : '').toMatch(
      /^--kv-cache-mib 16000000 \(15625\.00 GiB\) and the colocated rank's weights \([\d.]+ GiB\) would take 156\d\d\.\d\d GiB of host memory, but this host has [\d.]+ GiB available \((MemAvailable in \/proc\/meminfo|the cgroup memory limit in .*)\); give --kv-cache-mib \d+ or less$/,
    );
    expect(role.events.some((e) => e.type === 'ready')).toBe(false);
    // Unchecked, the engine zero-fills the cache at ~100-250 MB/s until the OOM killer comes.
    expect(peakRss).toBeLessThan(1024 * 2 ** 20);
    expect(seconds).toBeLessThan(45); // program load and the tokenizer on a loaded 2-core box; the refusal itself is immediate
  }, 60_000);
});
