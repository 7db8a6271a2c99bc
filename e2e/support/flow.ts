/** Steps of the console flow shared by the browser-mode and Electron specs. */
import { expect, type Page } from '@playwright/test';
import { join } from 'node:path';
import { ARTIFACTS } from './paths.js';

/** The topology the e2e flow launches (AFD_E2E_TOPOLOGY overrides, e.g. "colocated" while AFD roles are missing). */
export const E2E_TOPOLOGY = process.env['AFD_E2E_TOPOLOGY'] ?? '2A2F';

/** Saves the whole screen: the window grows to the main panel's height for the shot. */
export async function screenshot(page: Page, name: string): Promise<void> {
  const size = page.viewportSize() ?? { width: 1440, height: 1000 };
  const height = await page.evaluate(() => document.querySelector('.app-main')?.scrollHeight ?? 0);
  if (height > size.height) await page.setViewportSize({ width: size.width, height: Math.min(height + 8, 4000) });
  await page.screenshot({ path: join(ARTIFACTS, `${name}.png`) });
  if (height > size.height) await page.setViewportSize(size);
}

export async function openScreen(page: Page, id: string): Promise<void> {
  await page.getByTestId(`nav-${id}`).click();
  await expect(page.getByTestId(`nav-${id}`)).toHaveAttribute('aria-selected', 'true');
}

export async function addAgent(page: Page, url: string, token: string): Promise<void> {
  await openScreen(page, 'agents');
  await page.getByTestId('agent-url').fill(url);
  await page.getByTestId('agent-token').fill(token);
  await page.getByTestId('agent-add').click();
  // The add is done (connected or refused) when the button reads "Add agent" again.
  await expect(page.getByTestId('agent-add')).toHaveText('Add agent');
}

/** Picks the topology on the Topology screen and launches it; waits until running. */
export async function launchTopology(page: Page, topology: string, prefix: string): Promise<void> {
  await openScreen(page, 'topology');
  if (topology === 'colocated') await page.getByTestId('preset-colocated').check();
  else if (['1A1F', '2A1F', '2A2F', '4A2F', '4A4F'].includes(topology)) await page.getByTestId(`preset-${topology}`).check();
  else {
    await page.getByTestId('preset-custom').check();
    await page.getByTestId('custom-topology').fill(topology);
  }
  await expect(page.getByTestId('topology-ok')).toBeVisible();
  await screenshot(page, `${prefix}topology`);
  await page.getByTestId('launch-button').click();
  await expect(page.getByTestId('nav-launch')).toHaveAttribute('aria-selected', 'true');
  await expect(page.getByTestId('launch-state')).toHaveText('running', { timeout: 120_000 });
  await screenshot(page, `${prefix}launch`);
}

/** Sends a chat message; waits for streamed text and per-message stats. */
export async function chat(page: Page, text: string, prefix: string): Promise<void> {
  await openScreen(page, 'playground');
  await page.getByTestId('max-tokens').fill('24');
  await page.getByTestId('temperature').fill('0');
  await page.getByTestId('chat-input').fill(text);
  await page.getByTestId('chat-send').click();
  const reply = page.getByTestId('msg-assistant').last();
  // Streaming: the stage shows decode while tokens arrive, the clock runs.
  await expect(reply.getByTestId('msg-content')).not.toHaveText(/^…?$/, { timeout: 60_000 });
  await expect(reply).toHaveAttribute('data-stage', /done|stopped/, { timeout: 90_000 });
  const stats = reply.getByTestId('msg-stats');
  await expect(stats).toContainText('TTFT');
  await expect(stats).toContainText('decode');
  await expect(stats).toContainText(/ITL \d/);
  await screenshot(page, `${prefix}playground`);
}

/** Raw completion mode: a prompt, streamed, with its stats. */
export async function complete(page: Page, prompt: string): Promise<void> {
  await openScreen(page, 'playground');
  await page.getByTestId('mode-completion').check();
  await page.getByTestId('chat-input').fill(prompt);
  await page.getByTestId('chat-input').press('Enter');
  const reply = page.getByTestId('msg-assistant').last();
  await expect(reply).toHaveAttribute('data-stage', /done|stopped/, { timeout: 90_000 });
  await expect(reply.getByTestId('msg-stats')).toContainText('TTFT');
  await page.getByTestId('mode-chat').check();
}

/** Stops the running topology from the Launch screen and waits until it has stopped. */
export async function stopFromLaunchScreen(page: Page): Promise<void> {
  await openScreen(page, 'launch');
  await page.getByTestId('stop-button').click();
  await expect(page.getByTestId('launch-state')).toHaveText('stopped', { timeout: 60_000 });
}
