/**
 * What `npm start` gives a newcomer (browser mode here: no Electron binary): the console
 * with its own local agent and the built-in model already launched as 1A1F, ready to chat.
 */
import { expect, test } from '@playwright/test';
import { startConsole, type StartedConsole } from '../support/processes.js';
import { chat, screenshot } from '../support/flow.js';

let host: StartedConsole;
test.beforeAll(async () => {
  host = await startConsole([], 'demo');
});
test.afterAll(async () => {
  await host?.stop();
});

test('npm start: local agent, 1A1F launched, chat works', async ({ page }) => {
  await page.goto(host.url);
  await expect(page.getByTestId('nav-playground')).toHaveAttribute('aria-selected', 'true');
  await expect(page.getByTestId('launch-badge')).toHaveText('1A1F running', { timeout: 90_000 });
  await chat(page, 'Hi there', 'start-');
  expect(host.output.join('\n')).toMatch(/ready: chat in the console, or use the OpenAI API at http:\/\/127\.0\.0\.1:\d+\/v1/);
  await screenshot(page, 'start-playground');
});
