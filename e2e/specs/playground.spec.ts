/**
 * The Playground a user keeps open, against a real agent serving a scripted checkpoint
 * (support/scriptedModel.ts: its reply is known, so what the console shows can be
 * checked): the reply renders as markdown and the `<script>` in it stays text; copy,
 * regenerate and edit-resend; several chats with rename and delete; and a reload keeps
 * the chats and every setting.
 */
import { expect, test, type Page } from '@playwright/test';
import { addAgent, launchTopology, openScreen, screenshot } from '../support/flow.js';
import { startAgent, startConsole, type StartedAgent, type StartedConsole } from '../support/processes.js';
import { scriptedModel } from '../support/scriptedModel.js';

test.describe.configure({ mode: 'serial' });

/** Every token distinct (the scripted model's rule): a heading with inline HTML, then an indented code block. */
const REPLY = '## Markdown <script>alert("x")</SCRIPT>\n\n    indented code';
let agent: StartedAgent;
let host: StartedConsole;
let page: Page;
let modelDir: string;
const dialogs: string[] = [];

test.beforeAll(async ({ browser }) => {
  modelDir = scriptedModel('markdown', REPLY);
  agent = await startAgent();
  host = await startConsole();
  const context = await browser.newContext({ permissions: ['clipboard-read', 'clipboard-write'] });
  page = await context.newPage();
  page.on('dialog', (d) => {
    dialogs.push(d.message());
    void d.dismiss();
  });
  await page.goto(host.url);
  await addAgent(page, agent.url, agent.token);
});

test.afterAll(async () => {
  await page?.context().close();
  await host?.stop();
  await agent?.stop();
});

async function ask(text: string): Promise<void> {
  await page.getByTestId('chat-input').fill(text);
  await page.getByTestId('chat-send').click();
  await expect(page.getByTestId('msg-assistant').last()).toHaveAttribute('data-stage', 'done', { timeout: 60_000 });
}

test('the agent inspects the model directory: architecture, size and roles before launch', async () => {
  await openScreen(page, 'topology');
  await page.getByTestId('preset-1A1F').check();
  await page.getByTestId('model-dir').fill(modelDir);
  await expect(page.getByTestId('model-info-line')).toHaveAttribute('data-status', 'ready');
  await expect(page.getByTestId('model-info-line')).toContainText(/Qwen3MoeForCausalLM · 4 layers · [\d.]+ M parameters · 8 experts \(2 per token\) · [\d.]+ MiB safetensors \(1 file\) · roles: colocated, attention, ffn/);
  await launchTopology(page, '1A1F', 'scripted-');
});

test('a reply renders as markdown, and the <script> in it stays inert text', async () => {
  await openScreen(page, 'playground');
  await ask('Show me some markdown');
  const reply = page.getByTestId('msg-assistant').last();
  await expect(reply.getByRole('heading', { level: 2 })).toHaveText('Markdown <script>alert("x")</SCRIPT>');
  await expect(reply.locator('pre code')).toHaveText('indented code');
  await expect(page.locator('[data-testid="chat-log"] script')).toHaveCount(0);
  expect(await page.evaluate(() => document.querySelectorAll('script:not([type="module"])').length)).toBe(0);
  expect(dialogs).toEqual([]);
  await reply.getByTestId('code-copy').click();
  await expect(reply.getByTestId('code-copy')).toHaveText('Copied');
  expect(await page.evaluate(() => navigator.clipboard.readText())).toBe('indented code');
  await screenshot(page, 'playground-markdown');
});

test('copy, regenerate and edit-resend a message', async () => {
  const reply = page.getByTestId('msg-assistant').last();
  await reply.getByTestId('msg-copy').click();
  expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(REPLY);
  await reply.getByTestId('msg-regenerate').click();
  await expect(page.getByTestId('msg-assistant')).toHaveCount(1);
  await expect(page.getByTestId('msg-assistant').last()).toHaveAttribute('data-stage', 'done', { timeout: 60_000 });
  await page.getByTestId('msg-user').last().getByTestId('msg-edit').click();
  await page.getByTestId('msg-edit-input').fill('Show me markdown again');
  await page.getByTestId('msg-resend').click();
  await expect(page.getByTestId('msg-user').getByTestId('msg-content')).toHaveText(['Show me markdown again']);
  await expect(page.getByTestId('msg-assistant').last()).toHaveAttribute('data-stage', 'done', { timeout: 60_000 });
  await expect(page.getByTestId('msg-assistant')).toHaveCount(1);
});

test('several chats: new, rename, delete', async () => {
  await page.getByTestId('chat-new').click();
  await ask('A second chat');
  await page.getByTestId('chat-new').click();
  await ask('A third chat, to delete');
  await expect(page.getByTestId('conversation')).toHaveCount(3);
  const second = page.locator('[data-testid="conversation"][data-title="A second chat"]');
  await second.getByTestId('conversation-rename').click();
  await page.getByTestId('conversation-rename-input').fill('Renamed chat');
  await page.getByTestId('conversation-rename-input').press('Enter');
  await expect(page.locator('[data-testid="conversation"][data-title="Renamed chat"]')).toHaveCount(1);
  const third = page.locator('[data-testid="conversation"][data-title="A third chat, to delete"]');
  await third.getByTestId('conversation-delete').click();
  await expect(third.getByTestId('conversation-delete')).toHaveText('Really delete?');
  await third.getByTestId('conversation-delete').click();
  await expect(page.getByTestId('conversation')).toHaveCount(2);
  await screenshot(page, 'playground-chats');
});

test('a reload keeps the chats, the sampling, the system prompt and the topology options', async () => {
  await page.locator('[data-testid="conversation"][data-title="Renamed chat"]').getByTestId('conversation-open').click();
  await page.getByTestId('temperature').fill('0.3');
  await page.getByTestId('max-tokens').fill('77');
  await page.getByTestId('system-prompt').fill('Answer in markdown.');
  await openScreen(page, 'topology');
  await page.getByTestId('dbo-enabled').check();
  // The writes wait for typing to pause; give them that pause before the reload.
  await page.waitForTimeout(1000);
  await page.reload();
  await openScreen(page, 'playground');
  await expect(page.getByTestId('conversation')).toHaveCount(2);
  await expect(page.locator('[data-testid="conversation"][data-title="Renamed chat"] [aria-current="true"]')).toHaveCount(1);
  await expect(page.getByTestId('msg-user').getByTestId('msg-content')).toHaveText(['A second chat']);
  await expect(page.getByTestId('msg-assistant').getByRole('heading', { level: 2 })).toHaveText('Markdown <script>alert("x")</SCRIPT>');
  await expect(page.getByTestId('msg-assistant').getByTestId('msg-stats')).toContainText('TTFT');
  await expect(page.getByTestId('temperature')).toHaveValue('0.3');
  await expect(page.getByTestId('max-tokens')).toHaveValue('77');
  await expect(page.getByTestId('system-prompt')).toHaveValue('Answer in markdown.');
  await page.locator('[data-testid="conversation"][data-title="Show me some markdown"]').getByTestId('conversation-open').click();
  await expect(page.getByTestId('msg-user').getByTestId('msg-content')).toHaveText(['Show me markdown again']);
  await openScreen(page, 'topology');
  await expect(page.getByTestId('preset-1A1F')).toBeChecked();
  await expect(page.getByTestId('model-dir')).toHaveValue(modelDir);
  await expect(page.getByTestId('dbo-enabled')).toBeChecked();
  await expect(page.getByTestId('model-info-line')).toHaveAttribute('data-status', 'ready');
  await screenshot(page, 'topology-after-reload');
  await openScreen(page, 'launch');
  await page.getByTestId('stop-button').click();
  await expect(page.getByTestId('launch-state')).toHaveText('stopped', { timeout: 60_000 });
});
