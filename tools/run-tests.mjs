// The whole suite: vitest (unit + integration) and, when present, the Playwright e2e
// suite. Ends with one plain line "tests: N passed, N failed, N skipped".
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, mkdirSync } from 'node:fs';

const root = new URL('..', import.meta.url).pathname;
mkdirSync(`${root}test-results`, { recursive: true });
let passed = 0;
let failed = 0;
let skipped = 0;
let exitCode = 0;

const extra = process.argv.slice(2);
const vitestReport = `${root}test-results/vitest.json`;
const vitest = spawnSync(
  process.execPath,
  [`${root}node_modules/vitest/vitest.mjs`, 'run', '--reporter=default', '--reporter=json', `--outputFile.json=${vitestReport}`, ...extra],
  { stdio: 'inherit', cwd: root },
);
if (vitest.status !== 0) exitCode = 1;
if (existsSync(vitestReport)) {
  const r = JSON.parse(readFileSync(vitestReport, 'utf8'));
  passed += r.numPassedTests;
  failed += r.numFailedTests;
  skipped += r.numPendingTests + (r.numTodoTests ?? 0);
} else {
  failed += 1;
}

const e2eConfig = `${root}e2e/playwright.config.ts`;
if (existsSync(e2eConfig) && process.env['AFD_SKIP_E2E'] !== '1' && extra.length === 0) {
  const e2eReport = `${root}test-results/e2e.json`;
  const e2e = spawnSync(process.execPath, [`${root}node_modules/@playwright/test/cli.js`, 'test', '-c', e2eConfig], {
    stdio: 'inherit',
    cwd: root,
    env: { ...process.env, PLAYWRIGHT_JSON_OUTPUT_NAME: e2eReport },
  });
  if (e2e.status !== 0) exitCode = 1;
  if (existsSync(e2eReport)) {
    const s = JSON.parse(readFileSync(e2eReport, 'utf8')).stats;
    passed += s.expected;
    failed += s.unexpected + (s.flaky ?? 0) * 0;
    skipped += s.skipped;
  } else {
    failed += 1;
  }
}

console.log(`tests: ${passed} passed, ${failed} failed, ${skipped} skipped`);
process.exit(exitCode);
