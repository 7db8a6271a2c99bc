/**
 * The console round (issue 43, items 1, 2 and 4) in the real renderer served by the real
 * browser-mode host. Replies and metric snapshots come from a scripted console service
 * (support/scriptedConsole.ts: every frame checked against the bridge contract), so their
 * text is known: markdown with GFM tables, strikethrough, task lists and KaTeX math, HTML
 * that must stay inert; the mode of each turn, example prompts that never change it; the
 * Playground's composer pinned in the window at 1280x720 and 1024x640 with the settings
 * panel remembered; the Dashboard's four transfer maps in one row at 1920 wide and two rows
 * of two at 1280. Then a real agent with the demo model and no topology: Send is off with
 * its reason, and the Topology screen names the model an empty directory loads.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { expect, test, type Page } from '@playwright/test';
import type { BridgeRequest, LaunchProgress } from '@afd/shared';
import { SyntheticMetrics } from '../../app/src/renderer/testing/syntheticMetrics.js';
import { addAgent, openScreen, screenshot } from '../support/flow.js';
import { ROOT } from '../support/paths.js';
import { startAgent, startConsole, type StartedAgent, type StartedConsole } from '../support/processes.js';
import { routeScriptedConsole, SCRIPTED_LAUNCH, type ScriptedConsole, type ScriptStep } from '../support/scriptedConsole.js';

test.describe.configure({ mode: 'serial' });

const LAUNCH: LaunchProgress = {
  ...SCRIPTED_LAUNCH,
  model: { name: 'scripted-model', parameters: 1_000_000, description: 'a scripted console service answers', examplePrompts: [{ mode: 'chat', text: 'What is a castle?' }, { mode: 'chat', text: 'What is a river?' }] },
};

/** A reply in every markdown form the Playground renders, and HTML that must not run. */
const MARKDOWN_REPLY = [
  'Here is a table:',
  '',
  '| model | experts |',
  '|:------|--------:|',
  '| demo | 8 |',
  '',
  'It is ~~slow~~ fast, and $E=mc^2$ holds.',
  '',
  '- [x] tables',
  '- [ ] more',
  '',
  '$$',
  '\\sum_{i=1}^{n} i = \\frac{n(n+1)}{2}',
  '$$',
  '',
  '<script>window.__pwned = 1</script><img src="x" onerror="window.__pwned = 2">',
].join('\n');

const LONG_REPLY = Array.from({ length: 12 }, (_, i) => `Line ${i + 1} of a long reply, long enough to wrap in a narrow column of the conversation.`).join('\n\n');

function textReply(text: string, model = 'scripted-model'): ScriptStep[] {
  const timings = (ms: number) => ({ sinceStartMs: ms, sincePrevMs: 10 });
  const half = Math.floor(text.length / 2);
  return [
    { channel: 'chat.accepted', payload: { sinceStartMs: 5, model } },
    { channel: 'chat.delta', payload: { text: text.slice(0, half), stage: 'prefill', timings: timings(30) } },
    { channel: 'chat.delta', payload: { text: text.slice(half), stage: 'decode', timings: timings(40) } },
    { channel: 'chat.done', payload: { finishReason: 'stop', usage: { promptTokens: 10, completionTokens: 20 }, timings: { ttftMs: 30, totalMs: 50, tokensPerSecond: 100 } } },
  ];
}

function replyTo(request: BridgeRequest<'chat.start'>): ScriptStep[] {
  if (request.mode === 'completion') return textReply(' and the rest of the story.');
  const last = request.messages.at(-1);
  return textReply(last?.content === 'Show me markdown' ? MARKDOWN_REPLY : LONG_REPLY);
}

let host: StartedConsole;
let page: Page;
let service: ScriptedConsole;
const dialogs: string[] = [];
const foreignRequests: string[] = [];

test.beforeAll(async ({ browser }) => {
  host = await startConsole();
  page = await browser.newPage();
  page.on('dialog', (d) => {
    dialogs.push(d.message());
    void d.dismiss();
  });
  // The console runs offline: every request stays on its own host (KaTeX's fonts too).
  const origin = new URL(host.url).origin;
  page.on('request', (r) => {
    if (!r.url().startsWith(origin) && !r.url().startsWith('data:')) foreignRequests.push(r.url());
  });
  service = await routeScriptedConsole(page, replyTo, { launch: LAUNCH });
  await page.goto(host.url);
  await openScreen(page, 'playground');
});

test.afterAll(async () => {
  await page?.close();
  await host?.stop();
});

async function ask(text: string): Promise<void> {
  await page.getByTestId('chat-input').fill(text);
  await page.getByTestId('chat-send').click();
  await expect(page.getByTestId('msg-assistant').last()).toHaveAttribute('data-stage', 'done');
}

/** The composer and Send lie inside the window, and neither the page nor the main panel scrolls. */
async function expectComposerInView(what: string): Promise<void> {
  const { width, height } = page.viewportSize()!;
  for (const id of ['chat-input', 'chat-send']) {
    await expect(page.getByTestId(id)).toBeVisible();
    const box = (await page.getByTestId(id).boundingBox())!;
    expect(box.y, `${id} top, ${what}`).toBeGreaterThanOrEqual(0);
    expect(box.y + box.height, `${id} bottom, ${what}`).toBeLessThanOrEqual(height);
    expect(box.x + box.width, `${id} right, ${what}`).toBeLessThanOrEqual(width);
  }
  const scroll = await page.evaluate(() => {
    const main = document.querySelector('.app-main')!;
    return { page: document.documentElement.scrollHeight - window.innerHeight, main: main.scrollHeight - main.clientHeight };
  });
  expect(scroll, `nothing scrolls but the conversation, ${what}`).toEqual({ page: 0, main: 0 });
}

test('a reply renders GFM tables, strikethrough, task lists and KaTeX math; its HTML stays inert', async () => {
  await ask('Show me markdown');
  const reply = page.getByTestId('msg-assistant').last().getByTestId('markdown');
  await expect(reply.locator('table th')).toHaveText(['model', 'experts']);
  await expect(reply.locator('table td')).toHaveText(['demo', '8']);
  await expect(reply.locator('del')).toHaveText('slow');
  await expect(reply.locator('li.task-list-item input[type="checkbox"]')).toHaveCount(2);
  await expect(reply.locator('li.task-list-item input[type="checkbox"]').first()).toBeChecked();
  // Inline math is typeset in the line; display math in its own block.
  await expect(reply.locator('p .katex')).toHaveCount(1);
  await expect(reply.locator('p .katex annotation')).toHaveText('E=mc^2');
  await expect(reply.locator('.katex-display')).toHaveCount(1);
  await expect(reply.locator('.katex-display annotation')).toHaveText('\\sum_{i=1}^{n} i = \\frac{n(n+1)}{2}');
  // KaTeX's stylesheet and fonts are the bundled ones: the formula is set in KaTeX_Main, loaded from this host.
  expect(await reply.locator('p .katex').evaluate((el) => getComputedStyle(el).fontFamily)).toContain('KaTeX_Main');
  await expect.poll(() => page.evaluate(() => document.fonts.check('16px KaTeX_Main'))).toBe(true);
  // The HTML is text: no element, no handler ran.
  await expect(reply).toContainText('<script>window.__pwned = 1</script>');
  await expect(page.locator('[data-testid="chat-log"] script, [data-testid="chat-log"] img')).toHaveCount(0);
  expect(await page.evaluate(() => (window as { __pwned?: number }).__pwned)).toBeUndefined();
  expect(dialogs).toEqual([]);
  expect(foreignRequests).toEqual([]);
  await screenshot(page, 'playground-markdown-math');
});

test('each turn shows its mode; an example fills the composer and keeps the mode, which a reload keeps too', async () => {
  await expect(page.getByTestId('msg-user').last().getByTestId('msg-mode')).toHaveText('chat');
  await expect(page.getByTestId('msg-assistant').last().getByTestId('msg-mode')).toHaveText('chat');
  await page.getByTestId('mode-completion').check();
  // This model's examples are chat messages; in raw completion mode they go in as prompts.
  await page.getByTestId('example-prompt').filter({ hasText: 'What is a castle?' }).click();
  await expect(page.getByTestId('chat-input')).toHaveValue('What is a castle?');
  await expect(page.getByTestId('mode-completion')).toBeChecked();
  await page.getByTestId('chat-send').click();
  await expect(page.getByTestId('msg-assistant').last()).toHaveAttribute('data-stage', 'done');
  expect(service.chats.at(-1)).toMatchObject({ mode: 'completion', prompt: 'What is a castle?' });
  await expect(page.getByTestId('msg-user').last().getByTestId('msg-mode')).toHaveText('raw completion');
  await expect(page.getByTestId('msg-assistant').last().getByTestId('msg-mode')).toHaveText('raw completion');
  await page.reload();
  await openScreen(page, 'playground');
  await expect(page.getByTestId('mode-completion')).toBeChecked();
  await expect(page.getByTestId('msg-mode')).toHaveText(['chat', 'chat', 'raw completion', 'raw completion']);
  await page.getByTestId('mode-chat').check();
  await page.getByTestId('example-prompt').filter({ hasText: 'What is a river?' }).click();
  await expect(page.getByTestId('mode-chat')).toBeChecked();
  await page.getByTestId('chat-input').fill('');
  await screenshot(page, 'playground-turn-modes');
});

for (const [width, height] of [[1280, 720], [1024, 640]] as const) {
  test(`at ${width}x${height} the composer stays in the window after three exchanges and after a reload`, async () => {
    await page.setViewportSize({ width, height });
    await page.getByTestId('chat-new').click();
    for (const n of [1, 2, 3]) {
      await ask(`Exchange ${n} at ${width}x${height}`);
      await expectComposerInView(`after exchange ${n}`);
    }
    // The conversation is longer than its box: it scrolls there, under the composer's row.
    const log = await page.getByTestId('chat-log').evaluate((el) => ({ height: el.scrollHeight, client: el.clientHeight }));
    expect(log.height).toBeGreaterThan(log.client);
    const logBox = (await page.getByTestId('chat-log').boundingBox())!;
    expect(logBox.y + logBox.height).toBeLessThanOrEqual((await page.getByTestId('chat-input').boundingBox())!.y);
    await page.reload();
    await openScreen(page, 'playground');
    await expect(page.getByTestId('msg-assistant')).toHaveCount(3);
    await expectComposerInView('after a reload');
    await screenshot(page, `playground-${width}x${height}`);
  });
}

test('the settings panel: a column at 1280, a drawer at 1024, open or closed as left across reloads', async () => {
  await page.setViewportSize({ width: 1280, height: 720 });
  const panel = page.getByTestId('settings-panel');
  const toggle = page.getByTestId('settings-toggle');
  await expect(panel).toBeVisible(); // open: the user has not chosen yet, and at 1280 it fits beside the conversation
  await expect(panel.getByTestId('model-header')).toContainText('scripted-model');
  // Beside the conversation, not over it.
  const [chatBox, panelBox] = [(await page.getByTestId('chat-log').boundingBox())!, (await panel.boundingBox())!];
  expect(chatBox.x + chatBox.width).toBeLessThanOrEqual(panelBox.x);
  await toggle.click();
  await expect(panel).toHaveCount(0);
  await expect(toggle).toHaveAttribute('aria-expanded', 'false');
  await page.reload();
  await openScreen(page, 'playground');
  await expect(page.getByTestId('settings-toggle')).toHaveAttribute('aria-expanded', 'false');
  await expect(panel).toHaveCount(0);
  await expectComposerInView('settings closed at 1280x720');
  await page.setViewportSize({ width: 1024, height: 640 });
  await toggle.click();
  // A drawer over the conversation's right side, above the composer.
  await expect(panel).toBeVisible();
  const [logBox, drawerBox, inputBox] = [(await page.getByTestId('chat-log').boundingBox())!, (await panel.boundingBox())!, (await page.getByTestId('chat-input').boundingBox())!];
  expect(drawerBox.x).toBeGreaterThan(logBox.x);
  expect(drawerBox.x).toBeLessThan(logBox.x + logBox.width);
  expect(drawerBox.y + drawerBox.height).toBeLessThanOrEqual(inputBox.y);
  await expectComposerInView('drawer open at 1024x640');
  await page.getByTestId('chat-input').fill('typed with the drawer open');
  await expect(page.getByTestId('chat-send')).toBeEnabled();
  await page.getByTestId('chat-send').click({ trial: true }); // nothing covers it
  await page.getByTestId('chat-input').fill('');
  await screenshot(page, 'playground-settings-drawer-1024x640');
  await page.reload();
  await openScreen(page, 'playground');
  await expect(panel).toBeVisible();
  await page.getByTestId('settings-toggle').click();
  await expect(panel).toHaveCount(0);
  await expectComposerInView('drawer closed at 1024x640');
  expect(service.violations).toEqual([]);
});

test('the Dashboard: the four transfer maps in one row at 1920x1080, two rows of two at 1280x720', async () => {
  // 2A2F, 4 layers, 2 stages: snapshots of every rank, as the service pushes them.
  const metrics = new SyntheticMetrics({ attentionRanks: 2, ffnRanks: 2, numLayers: 4, numStages: 2 });
  const feed = setInterval(() => {
    for (const snapshot of metrics.tick(Date.now())) service.push('metrics.snapshot', { agentId: 'scripted-agent', launchId: LAUNCH.launchId, snapshot });
  }, 100);
  try {
    await page.setViewportSize({ width: 1920, height: 1080 });
    await openScreen(page, 'dashboard');
    const maps = ['A→F bytes', 'F→A bytes', 'A→F wire time', 'F→A wire time'].map((t) => page.getByTestId(`heatmap-${t}`));
    await expect(maps[0]!).toBeVisible();
    const boxes = async () => Promise.all(maps.map(async (m) => (await m.boundingBox())!));
    let b = await boxes();
    expect(new Set(b.map((x) => Math.round(x.y))).size, 'one row at 1920').toBe(1);
    expect(b[0]!.x).toBeLessThan(b[1]!.x);
    expect(b[2]!.x).toBeLessThan(b[3]!.x);
    await screenshot(page, 'dashboard-maps-1920x1080');
    await page.setViewportSize({ width: 1280, height: 720 });
    await expect.poll(async () => Math.round((await maps[2]!.boundingBox())!.y)).toBeGreaterThan(Math.round((await maps[0]!.boundingBox())!.y));
    b = await boxes();
    const top = (i: number) => Math.round(b[i]!.y);
    expect([top(0) === top(1), top(2) === top(3), top(2) > top(0)], 'two rows of two at 1280').toEqual([true, true, true]);
    expect(Math.round(b[0]!.x)).toBe(Math.round(b[2]!.x));
    await screenshot(page, 'dashboard-maps-1280x720');
  } finally {
    clearInterval(feed);
  }
  expect(service.violations).toEqual([]);
});

test.describe('against a real agent serving nothing yet', () => {
  let agent: StartedAgent;
  let real: Page;
  const demoPresent = existsSync(join(ROOT, 'models', 'afd-demo-moe', 'config.json'));

  test.beforeAll(async ({ browser }) => {
    agent = await startAgent('demo');
    real = await browser.newPage({ viewport: { width: 1280, height: 720 } });
    await real.goto(host.url);
    await addAgent(real, agent.url, agent.token);
  });
  test.afterAll(async () => {
    await real?.close();
    await agent?.stop();
  });

  test('Send is off, with the reason beside it, while no topology runs', async () => {
    await openScreen(real, 'playground');
    await expect(real.getByTestId('launch-badge')).toHaveText('no topology');
    await expect(real.getByTestId('chat-send')).toBeDisabled();
    await expect(real.getByTestId('send-blocked')).toHaveText('Send is off: no topology is running');
    await expect(real.getByTestId('send-blocked')).toBeInViewport();
    await expect(real.getByTestId('chat-send')).toHaveAttribute('aria-describedby', 'send-blocked');
    // Enter does not send either.
    await real.getByTestId('chat-input').fill('Hello?');
    await real.getByTestId('chat-input').press('Enter');
    await expect(real.getByTestId('chat-input')).toHaveValue('Hello?');
    await expect(real.getByTestId('msg-user')).toHaveCount(0);
    await screenshot(real, 'playground-send-off');
  });

  test('the Topology screen names the model an empty model directory loads', async () => {
    await openScreen(real, 'topology');
    await real.getByTestId('preset-1A1F').check();
    await real.getByTestId('model-dir').fill('');
    const line = real.getByTestId('default-model-line');
    if (demoPresent) await expect(line).toHaveText(/^The built-in model: afd-demo-moe, the trained demo model in \/.*models\/afd-demo-moe; demo model trained on .*\.$/);
    else await expect(line).toHaveText(/^The built-in model: tiny-qwen3-moe, a tiny Qwen3-MoE with random weights/);
    await expect(line).not.toContainText('random-weight Qwen3-MoE model (made on the agent');
    await screenshot(real, 'topology-default-model');
  });
});
