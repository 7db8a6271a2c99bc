/**
 * The same console flow in the Electron desktop app (`_electron.launch`): contextIsolation
 * + sandboxed preload bridge instead of the web socket. Skipped, with the reason, where no
 * Electron binary can run (offline installs never download it; headless hosts lack a display).
 */
import { _electron as electron, expect, test, type ElectronApplication, type Page } from '@playwright/test';
import { join } from 'node:path';
import { findElectron } from '../../app/src/start/electronBinary.js';
import { ROOT } from '../support/paths.js';
import { startAgent, type StartedAgent } from '../support/processes.js';
import { addAgent, chat, E2E_TOPOLOGY, launchTopology, openScreen } from '../support/flow.js';

const lookup = findElectron(process.env, join(ROOT, 'app', 'package.json'));
test.skip(!lookup.ok, `Electron spec skipped: ${lookup.ok ? '' : lookup.reason}`);
test.describe.configure({ mode: 'serial' });

let app: ElectronApplication;
let page: Page;
let agent: StartedAgent;

test.beforeAll(async () => {
  if (!lookup.ok) return;
  agent = await startAgent();
  app = await electron.launch({
    executablePath: lookup.path,
    args: [join(ROOT, 'app', 'dist', 'main', 'main.cjs')],
    env: { ...process.env, AFD_CONSOLE_ARGS: JSON.stringify(['--no-agent']) } as Record<string, string>,
  });
  page = await app.firstWindow();
});

test.afterAll(async () => {
  await app?.close();
  await agent?.stop();
});

test('the preload exposes only the typed bridge', async () => {
  const exposed = await page.evaluate(() => ({
    afd: Object.keys((window as unknown as { afd: object }).afd).sort(),
    node: typeof (window as unknown as { require?: unknown }).require,
    process: typeof (window as unknown as { process?: unknown }).process,
  }));
  expect(exposed).toEqual({ afd: ['invoke', 'on'], node: 'undefined', process: 'undefined' });
  await expect(page.evaluate(() => (window as unknown as { afd: { invoke(c: string, r: unknown): Promise<unknown> } }).afd.invoke('fs.read', {}))).rejects.toThrow(/unknown bridge channel/);
});

test('connect, launch, chat, watch and stop in the desktop app', async () => {
  await addAgent(page, agent.url, agent.token);
  await expect(page.locator('[data-testid^="agent-row-"]').first().getByTestId('agent-state')).toHaveText('connected');
  await launchTopology(page, E2E_TOPOLOGY, 'electron-');
  await chat(page, 'Hello from the desktop app', 'electron-');
  await openScreen(page, 'dashboard');
  await expect(page.getByTestId('stat-step')).not.toHaveText('–');
  await openScreen(page, 'launch');
  await page.getByTestId('stop-button').click();
  await expect(page.getByTestId('launch-state')).toHaveText('stopped', { timeout: 60_000 });
});
