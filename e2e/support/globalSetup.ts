/**
 * Builds what the suite runs (the agent bundle and the console) unless
 * AFD_E2E_SKIP_BUILD=1, and checks Chromium is there with a message saying how to get it.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { AFD_HOME, ARTIFACTS, ROOT } from './paths.js';
import { CHROMIUM_PATH } from '../playwright.config.js';

export default function globalSetup(): void {
  if (!existsSync(CHROMIUM_PATH)) {
    throw new Error(`Chromium is missing at ${CHROMIUM_PATH}: install it (apt-get install -y chromium) or set AFD_E2E_CHROMIUM`);
  }
  mkdirSync(ARTIFACTS, { recursive: true });
  mkdirSync(AFD_HOME, { recursive: true, mode: 0o700 });
  if (process.env['AFD_E2E_SKIP_BUILD'] === '1') return;
  const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
  for (const ws of ['@afd/agent', '@afd/app']) {
    execFileSync(npm, ['run', 'build', '--silent', '-w', ws], { cwd: ROOT, stdio: 'inherit' });
  }
}
