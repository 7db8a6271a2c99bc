/**
 * `npm start` with the demo model (models/afd-demo-moe, trained by tools/demo-model): the
 * playground names it in its header, offers its example prompts, and its answer to one of
 * them reads as English (most words in the wamerican dictionary list); with the token view on,
 * a chat reply cut by max tokens shows its tokens with their log-probabilities, and Continue
 * (continue_final_message through the real API) makes it longer. Skipped while the
 * checkpoint is not in the checkout.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, test } from '@playwright/test';
import { WordList } from '@afd/shared';
import { screenshot } from '../support/flow.js';
import { ROOT } from '../support/paths.js';
import { startConsole, type StartedConsole } from '../support/processes.js';

const demoDir = join(ROOT, 'models', 'afd-demo-moe');
const wordListPath = '/usr/share/dict/american-english';
const present = existsSync(join(demoDir, 'config.json'));

let host: StartedConsole;
test.beforeAll(async () => {
  if (present) host = await startConsole([], 'demo');
});
test.afterAll(async () => {
  await host?.stop();
});

test('the demo model answers in English and the playground names it', async ({ page }) => {
  test.skip(!present, `no demo model at ${demoDir} (train it with tools/demo-model; see its NOTES.md)`);
  expect(existsSync(wordListPath), `${wordListPath} is missing: apt-get install wamerican`).toBe(true);
  const words = WordList.fromText(readFileSync(wordListPath, 'utf8'));
  await page.goto(host.url);
  await expect(page.getByTestId('launch-badge')).toHaveText('1A1F running', { timeout: 90_000 });
  const header = page.getByTestId('model-header');
  await expect(header.getByTestId('model-name')).toHaveText('afd-demo-moe');
  await expect(header.getByTestId('model-description')).toContainText('demo model trained on');
  await expect(header.getByTestId('model-parameters')).toContainText('M parameters');

  await page.getByTestId('max-tokens').fill('48');
  await page.getByTestId('temperature').fill('0');
  await header.getByTestId('example-prompt').filter({ hasText: 'What is a castle?' }).click();
  await expect(page.getByTestId('chat-input')).toHaveValue('What is a castle?');
  await page.getByTestId('chat-send').click();
  const reply = page.getByTestId('msg-assistant').last();
  await expect(reply).toHaveAttribute('data-stage', 'done', { timeout: 90_000 });
  const text = (await reply.getByTestId('msg-content').textContent()) ?? '';
  const score = words.score(text);
  expect(score.words, `reply: ${text}`).toBeGreaterThanOrEqual(4);
  expect(score.inList / score.words, `reply: ${text}; not in the word list: ${score.missing.join(', ')}`).toBeGreaterThanOrEqual(0.8);
  await screenshot(page, 'demo-model-playground');
});

test('the token view and Continue on a chat reply cut by max tokens, against the real rank', async ({ page }) => {
  test.skip(!present, `no demo model at ${demoDir} (train it with tools/demo-model; see its NOTES.md)`);
  await page.goto(host.url);
  await expect(page.getByTestId('launch-badge')).toHaveText('1A1F running', { timeout: 90_000 });
  await page.getByTestId('max-tokens').fill('6');
  await page.getByTestId('temperature').fill('0');
  await page.getByTestId('token-view-toggle').check();
  await page.getByTestId('chat-input').fill('Tell me about the sea.');
  await page.getByTestId('chat-send').click();
  const reply = page.getByTestId('msg-assistant').last();
  await expect(reply).toHaveAttribute('data-stage', 'done', { timeout: 90_000 });
  await expect(reply.getByTestId('msg-finish')).toContainText('length');
  const tokens = reply.getByTestId('token');
  await expect(tokens).toHaveCount(6);
  const first = (await tokens.allTextContents()).join('');
  // Each token's title: its probability and logprob, then the top 5 alternatives at its position.
  for (const title of await tokens.evaluateAll((spans) => spans.map((s) => s.getAttribute('title') ?? ''))) {
    expect(title).toMatch(/^".*"  [\d.]+%  \(logprob -?[\d.]+\)\ntop alternatives:\n/s);
    expect(title.split('\n').slice(2)).toHaveLength(5);
  }

  await reply.getByTestId('msg-continue').click();
  await expect(reply).toHaveAttribute('data-stage', 'done', { timeout: 90_000 });
  await expect(page.getByTestId('msg-error')).toHaveCount(0);
  await expect(page.getByTestId('msg-assistant')).toHaveCount(1);
  expect(await tokens.count()).toBeGreaterThan(6);
  expect((await tokens.allTextContents()).join('').startsWith(first)).toBe(true);
  await tokens.first().hover();
  await screenshot(page, 'demo-model-token-view-continued');
});
