/**
 * Whether this machine can build the namespace test bed: root, and `ip netns` able to add
 * (and delete) a namespace with a veth pair. Tests skip with `reason` otherwise; CI runs
 * as root, so there they run.
 */
import { systemRunner, type CommandRunner } from './commandRunner.js';
import { BED_PREFIX } from './NetnsBed.js';

export type NetnsSupport = { ok: true } | { ok: false; reason: string };

let cached: Promise<NetnsSupport> | undefined;

async function probe(runner: CommandRunner): Promise<NetnsSupport> {
  if (process.platform !== 'linux') return { ok: false, reason: `network namespaces need Linux (this is ${process.platform})` };
  if (typeof process.getuid === 'function' && process.getuid() !== 0) {
    return { ok: false, reason: 'the two-host bed needs root (ip netns add); run as root, as CI does' };
  }
  const list = await runner.run('ip', ['netns', 'list']);
  if (list.code !== 0) return { ok: false, reason: `\`ip netns\` is unavailable: ${list.stderr.trim() || `exit ${list.code}`} (install iproute2)` };
  const ns = `${BED_PREFIX}-${process.pid}-0-probe`; // swept like a bed if this process dies here
  const add = await runner.run('ip', ['netns', 'add', ns]);
  if (add.code !== 0) return { ok: false, reason: `\`ip netns add\` failed: ${add.stderr.trim()}` };
  try {
    const veth = await runner.run('ip', ['-n', ns, 'link', 'add', 'p0', 'type', 'veth', 'peer', 'name', 'p1']);
    if (veth.code !== 0) return { ok: false, reason: `veth pairs are unavailable: ${veth.stderr.trim()}` };
    const bridge = await runner.run('ip', ['-n', ns, 'link', 'add', 'b0', 'type', 'bridge']);
    if (bridge.code !== 0) return { ok: false, reason: `bridges are unavailable: ${bridge.stderr.trim()}` };
    const openssl = await runner.run('openssl', ['version']);
    if (openssl.code !== 0) return { ok: false, reason: 'openssl is missing (the bed makes its test CA with it)' };
    return { ok: true };
  } finally {
    await runner.run('ip', ['netns', 'del', ns]);
  }
}

/** Probes once per process. */
export function netnsSupport(runner: CommandRunner = systemRunner): Promise<NetnsSupport> {
  cached ??= probe(runner);
  return cached;
}
