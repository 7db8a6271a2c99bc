/**
 * e2e: the console in browser mode, driven in Debian's Chromium (/usr/bin/chromium;
 * .ci/run installs it) against real `afd-agent serve` processes on the CPU backend.
 * Screenshots of every screen go to e2e/artifacts/. One worker: the suite shares agents
 * and a launch, and the CI machine has 2 cores.
 */
import { defineConfig } from '@playwright/test';

export const CHROMIUM_PATH = process.env['AFD_E2E_CHROMIUM'] ?? '/usr/bin/chromium';

export default defineConfig({
  testDir: './specs',
  outputDir: '../test-results/e2e-output',
  globalSetup: './support/globalSetup.ts',
  fullyParallel: false,
  workers: 1,
  retries: 0,
  timeout: 150_000,
  expect: { timeout: 20_000 },
  reporter: [['list'], ['json']],
  use: {
    browserName: 'chromium',
    viewport: { width: 1440, height: 1000 },
    colorScheme: 'dark',
    trace: 'retain-on-failure',
    screenshot: 'only-on-failure',
    launchOptions: {
      executablePath: CHROMIUM_PATH,
      args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
    },
  },
});
