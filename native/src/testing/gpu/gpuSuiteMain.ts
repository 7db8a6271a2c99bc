/**
 * Entry of the bundled GPU suite (tools/run-gpu-tests.mjs bundles this file): prints
 * one line per check, then a summary line, and writes the JSON report to
 * $AFD_GPU_REPORT when set. Exit code 1 when a check failed.
 */
import { writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { parseGpuSuiteGroups, runGpuSuite } from './gpuSuite.js';
import { kvPeerChild } from './kvPeerCheck.js';

async function main(): Promise<void> {
  // The kvpeer group's other process (kvPeerCheck.ts): engine A, whose memory the suite maps.
  const peerModel = process.env['AFD_KV_PEER_CHILD'];
  if (peerModel) return kvPeerChild(peerModel);
  // Before CUDA starts. The expert-parallel group runs two FFN ranks in this process, one
  // context, whose device exchange spins on the GPU until the other rank's kernels write:
  // lazily loaded kernels (CUDA's default) synchronize the context at their first launch,
  // which waits for such a spinning kernel forever, and two streams sharing a hardware
  // queue (8 by default) would serialize the waits; load eagerly and give 32 queues.
  process.env['CUDA_MODULE_LOADING'] ??= 'EAGER';
  process.env['CUDA_DEVICE_MAX_CONNECTIONS'] ??= '32';
  // The bundle lives in tools/gpu/dist/; the fixtures in tools/golden/fixtures.
  const fixturesDir = process.env['AFD_GOLDEN_DIR'] ?? join(dirname(process.argv[1] ?? '.'), '..', '..', 'golden', 'fixtures');
  // AFD_GPU_GROUPS: a comma list of groups (gpuSuiteGroups) to run, e.g. one per process.
  const groups = parseGpuSuiteGroups(process.env['AFD_GPU_GROUPS']);
  // Some native waits (FfnServer.wait) do not keep the event loop alive: a check stuck in
  // one must show as a stuck suite (the caller's timeout), not as an early, silent exit.
  const keepAlive = setInterval(() => undefined, 1000);
  const report = await runGpuSuite({
    fixturesDir,
    seed: Number(process.env['AFD_GPU_SEED'] ?? 1),
    groups,
    onGroup: (g) => process.stderr.write(`gpu tests: running ${g}\n`),
  }).finally(() => clearInterval(keepAlive));
  if (report.skipped) {
    console.log(`gpu tests: skipped: ${report.skipped}`);
  } else {
    for (const c of report.checks) console.log(`${c.passed ? 'PASS' : 'FAIL'} ${c.suite.padEnd(11)} ${c.name}: ${c.detail}`);
    for (const n of report.notes) console.log(`note: ${n}`);
  }
  const failed = report.checks.filter((c) => !c.passed).length;
  const outPath = process.env['AFD_GPU_REPORT'];
  if (outPath) writeFileSync(outPath, `${JSON.stringify(report, null, 2)}\n`);
  console.log(`gpu tests: ${report.checks.length - failed} passed, ${failed} failed${report.skipped ? ' (skipped)' : ''} on ${report.device || 'no device'}`);
  process.exitCode = failed > 0 ? 1 : 0;
}

main().catch((err: unknown) => {
  console.error(`gpu tests: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
  process.exitCode = 1;
});
