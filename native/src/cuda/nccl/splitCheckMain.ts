/**
 * Entry of the bundled split-stage check (tools/gpu/afd-prepare.sh bundles it next to the
 * addon as afd-split-check.cjs; tools/gpu/afd-run.sh runs it on one GPU): the AFD / DBO
 * split exactness checks of the GPU suite alone. Prints one line per check and writes
 * the JSON to the path in argv[2] when given. Exit code 1 when a check failed.
 */
import { writeFileSync } from 'node:fs';
import { loadAddon } from '../../index.js';
import { gpuSkipReason, splitStages } from '../gpuSuite.js';

function main(): void {
  const addon = loadAddon();
  const skipped = gpuSkipReason(addon);
  const checks = skipped ? [] : splitStages(addon);
  for (const c of checks) console.log(`${c.passed ? 'PASS' : 'FAIL'} ${c.name}: ${c.detail}`);
  if (skipped) console.log(`split check: skipped: ${skipped}`);
  const out = process.argv[2];
  if (out) writeFileSync(out, `${JSON.stringify({ skipped, checks }, null, 2)}\n`);
  const failed = checks.filter((c) => !c.passed).length;
  console.log(`split check: ${checks.length - failed} passed, ${failed} failed`);
  process.exitCode = failed > 0 || skipped ? 1 : 0;
}

try {
  main();
} catch (err: unknown) {
  console.error(`split check: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
  process.exitCode = 1;
}
