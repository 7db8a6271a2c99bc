/**
 * The console in browser mode against real local agents (CPU backend): connect an agent
 * (and see a wrong token refused), validate topologies, refuse a bad model directory
 * before launch, launch, chat with streamed tokens and per-message stats, stop a reply,
 * watch live dashboard panels, read logs, stop, and see the stopped topology marked.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, test, type Page } from '@playwright/test';
import { AFD_HOME, AGENT_SCRIPT } from '../support/paths.js';
import type { StartedAgent } from '../support/processes.js';
import { openConsoleSession, type ConsoleSession } from '../support/session.js';
import { addAgent, chat, complete, E2E_TOPOLOGY, launchTopology, openScreen, screenshot } from '../support/flow.js';
import { startLoad } from '../support/load.js';
import { formatPercent } from '../../app/src/renderer/lib/format.js';

test.describe.configure({ mode: 'serial' });

let session: ConsoleSession | undefined;
let agent: StartedAgent;
let page: Page;
/** What the dashboard showed for the serving stats under load. */
let serving: { tps: string; requests: string } | null = null;

/** A prompt of several full KV blocks (16 tokens each): every request after the first finds them in the prefix cache. */
const SHARED_PROMPT = `${'The quick brown fox jumps over the lazy dog, and the lazy dog sleeps in the sun. '.repeat(6)}Then`;

/** Sum of a counter over every series of a Prometheus text (the router's /metrics merges every rank's). */
function counterSum(text: string, name: string): number {
  return text
    .split('\n')
    .filter((l) => l.startsWith(`${name}{`) || l.startsWith(`${name} `))
    .reduce((a, l) => a + Number(l.slice(l.lastIndexOf(' ') + 1)), 0);
}

test.beforeAll(async ({ browser }) => {
  session = await openConsoleSession(browser);
  ({ agent, page } = session);
});

test.afterAll(async () => {
  await session?.close();
});

test('a wrong token is refused with a clear message', async () => {
  await addAgent(page, agent.url, 'not-the-token-0123456789');
  // Said once: the agent's reason, no second hint.
  await expect(page.getByTestId('agents-error')).toContainText(/rejected the token: use the token from the agent token file/);
  expect((await page.getByTestId('agents-error').innerText()).match(/token file/g)).toHaveLength(1);
  await addAgent(page, 'http://127.0.0.1:1', 'x');
  await expect(page.getByTestId('agents-error')).toContainText(/not an agent URL/);
});

test('connect an agent and see its inventory', async () => {
  await addAgent(page, agent.url, agent.token);
  const row = page.locator('[data-testid^="agent-row-"]').first();
  await expect(row.getByTestId('agent-state')).toHaveText('connected');
  await expect(row.getByTestId('agent-device').first()).toContainText('cpu');
  await screenshot(page, 'agents');
});

test('every screen is keyboard reachable', async () => {
  await page.keyboard.press('Alt+5');
  await expect(page.getByTestId('nav-dashboard')).toHaveAttribute('aria-selected', 'true');
  await page.getByTestId('nav-dashboard').focus();
  await page.keyboard.press('ArrowDown');
  await expect(page.getByTestId('nav-logs')).toHaveAttribute('aria-selected', 'true');
  await expect(page.getByTestId('nav-logs')).toBeFocused();
  await page.keyboard.press('Home');
  await expect(page.getByTestId('nav-agents')).toHaveAttribute('aria-selected', 'true');
  // Tab leaves the screen list for the screen's own controls.
  await page.keyboard.press('Tab');
  await expect(page.getByTestId('agent-url')).toBeFocused();
});

test('invalid topologies name the broken rule', async () => {
  await openScreen(page, 'topology');
  await page.getByTestId('preset-custom').check();
  await page.getByTestId('custom-topology').fill('1A2F');
  await expect(page.getByTestId('topology-problems')).toContainText('attention-ge-ffn');
  await page.getByTestId('custom-topology').fill('twoA');
  await expect(page.getByTestId('topology-problems')).toContainText('topology-syntax');
  await expect(page.getByTestId('launch-button')).toBeDisabled();
  await screenshot(page, 'topology-invalid');
});

test('a bad model path is refused before launch: missing, and config only', async () => {
  await openScreen(page, 'topology');
  await page.getByTestId('preset-1A1F').check();
  await page.getByTestId('model-dir').fill('/models/does-not-exist');
  // The agent inspects the directory while the path is typed; nothing is launched.
  await expect(page.getByTestId('topology-problems')).toContainText('model directory on agent');
  await expect(page.getByTestId('topology-problems')).toContainText('/models/does-not-exist does not exist on this host');
  await expect(page.getByTestId('launch-button')).toBeDisabled();
  await screenshot(page, 'topology-model-refused');
  // A directory with a config and a tokenizer but no weights: servable only with load format dummy.
  const configOnly = join(mkdtempSync(join(tmpdir(), 'afd-e2e-model-')), 'qwen3-30b-a3b');
  execFileSync(process.execPath, [AGENT_SCRIPT, 'make-model', '--arch', 'qwen3_moe', '--preset', 'qwen3-30b-a3b', '--config-only', '--out', configOnly], { env: { ...process.env, AFD_HOME } });
  await page.getByTestId('model-dir').fill(configOnly);
  await expect(page.getByTestId('topology-problems')).toContainText('config only: needs load format dummy');
  await expect(page.getByTestId('model-info-line')).toHaveAttribute('data-status', 'config-only');
  await expect(page.getByTestId('model-info-line')).toContainText(/Qwen3MoeForCausalLM · 48 layers · 30\.\d B parameters · 128 experts \(8 per token\) · no weights/);
  await expect(page.getByTestId('launch-button')).toBeDisabled();
  await screenshot(page, 'topology-model-config-only');
  // With dummy weights the same directory is servable: only its config and tokenizer are used.
  await page.getByTestId('load-format').selectOption('dummy');
  await expect(page.getByTestId('topology-ok')).toBeVisible();
  await expect(page.getByTestId('launch-button')).toBeEnabled();
  await page.getByTestId('load-format').selectOption('auto');
  await page.getByTestId('model-dir').fill('');
  await expect(page.getByTestId('topology-ok')).toBeVisible();
  await expect(page.getByTestId('launch-badge')).toHaveText('no topology');
});

test(`launch ${E2E_TOPOLOGY} and chat with streamed tokens`, async () => {
  await launchTopology(page, E2E_TOPOLOGY, '');
  await chat(page, 'Hello! Please tell me a story.', '');
  await complete(page, 'Once upon a time');
});

test('a running topology is not "ready to launch" another', async () => {
  await openScreen(page, 'topology');
  await page.getByTestId('preset-1A1F').check();
  await expect(page.getByTestId('topology-busy')).toContainText(`${E2E_TOPOLOGY} is running: stop it before launching 1A1F (Stop and launch this one, below, does both).`);
  await expect(page.getByTestId('topology-ok')).toHaveCount(0);
  await expect(page.getByTestId('launch-button')).toBeDisabled();
  await screenshot(page, 'topology-busy');
});

test('Stop and Esc during a reply show "stopped", with the tokens so far and the prompt count', async () => {
  await openScreen(page, 'playground');
  await page.getByTestId('mode-chat').check();
  await page.getByTestId('max-tokens').fill('4000');
  for (const how of ['button', 'Escape'] as const) {
    await page.getByTestId('chat-input').fill('Tell me a very long story about attention and FFN ranks.');
    await page.getByTestId('chat-send').click();
    const reply = page.getByTestId('msg-assistant').last();
    await expect(reply).toHaveAttribute('data-stage', 'decode', { timeout: 60_000 });
    await expect(reply.getByTestId('msg-content')).not.toHaveText(/^…?$/);
    if (how === 'button') {
      // The conversation scrolls in its own box, following the reply; the composer stays put.
      const log = page.getByTestId('chat-log');
      const scroll = () => log.evaluate((el) => ({ top: el.scrollTop, height: el.scrollHeight, client: el.clientHeight }));
      await expect.poll(async () => { const s = await scroll(); return s.height > s.client + 200; }, { timeout: 30_000 }).toBe(true);
      const y0 = (await page.getByTestId('chat-stop').boundingBox())!.y;
      await page.waitForTimeout(400);
      expect((await page.getByTestId('chat-stop').boundingBox())!.y).toBe(y0);
      // It follows one frame after the content grows: poll rather than read mid-frame.
      await expect.poll(async () => { const s = await scroll(); return s.height - s.top - s.client; }, { timeout: 5_000 }).toBeLessThan(100);
      // Scrolled up to read, it stays there while tokens keep coming.
      await log.evaluate((el) => { el.scrollTop = 0; el.dispatchEvent(new Event('scroll')); });
      await page.waitForTimeout(400);
      expect((await scroll()).top).toBe(0);
      await page.getByTestId('chat-stop').click();
    }
    else await page.getByTestId('chat-input').press('Escape');
    await expect(reply).toHaveAttribute('data-stage', 'stopped', { timeout: 30_000 });
    await expect(reply.getByTestId('msg-stage')).toHaveText('stopped');
    await expect(reply.getByTestId('msg-tokens')).toHaveText(/^\d+ tokens? before the stop \(prompt \d+\)$/);
  }
  await screenshot(page, 'playground-stopped');
  await page.getByTestId('max-tokens').fill('24');
});

test('dashboard shows live non-zero data', async () => {
  await openScreen(page, 'launch');
  const apiUrl = (await page.getByTestId('router-url').innerText()).replace(/\/v1$/, '');
  // Keep the topology busy while the dashboard is watched, with one prompt again and again (prefix-cache hits).
  const load = startLoad(apiUrl, { prompt: SHARED_PROMPT });
  try {
    await openScreen(page, 'dashboard');
    await expect(page.getByTestId('panel-throughput')).toBeVisible();
    await expect(page.getByTestId('stat-step')).toHaveText(/^\d[\d.]* (ms|µs|s)$/, { timeout: 30_000 });
    if (E2E_TOPOLOGY !== 'colocated') {
      await expect(page.getByTestId('heatmap-A→F bytes')).not.toHaveAttribute('data-nonzero', '0');
      await expect(page.getByTestId('heatmap-F→A bytes')).not.toHaveAttribute('data-nonzero', '0');
      await expect(page.getByTestId('heatmap-A→F wire time')).not.toHaveAttribute('data-nonzero', '0');
      await expect(page.getByTestId('heatmap-F→A wire time')).not.toHaveAttribute('data-nonzero', '0');
      // TCP between ranks of one host: each direction is timed by itself, and the maps say so.
      for (const dir of ['A→F', 'F→A']) await expect(page.getByTestId(`heatmap-${dir} wire time`)).toHaveAttribute('data-note', /^one-way: /);
      // The launch runs with DBO off: only s0 columns, and the panel says s1 is unused.
      await expect(page.getByTestId('dbo-off-stages')).toContainText('Stage s1 unused (DBO off)');
      await expect(page.locator('[data-testid^="ffn-row-"]')).toHaveCount(Number(/(\d+)F$/.exec(E2E_TOPOLOGY)?.[1] ?? 1));
      await expect(page.locator('[data-testid^="ffn-row-"]').first().getByTestId('ffn-steps')).not.toHaveText('0');
    }
    // Prefix cache: the repeated prompt's full blocks are found, so the topology's hit rate over the
    // window is a percentage; every KV rank has a row (and an "all" row when there are several).
    await expect(page.getByTestId('stat-prefix')).toHaveText(/^[1-9][\d.]*%$/, { timeout: 30_000 });
    await expect(page.getByTestId('panel-prefix').getByRole('img', { name: 'prefix cache hit rate' })).toBeVisible();
    const kvRanks = E2E_TOPOLOGY === 'colocated' ? 1 : Number(/^(\d+)A/.exec(E2E_TOPOLOGY)?.[1] ?? 1);
    await expect(page.locator('[data-testid^="prefix-row-"]')).toHaveCount(kvRanks > 1 ? kvRanks + 1 : kvRanks);
    await expect(page.locator('[data-testid^="prefix-row-"]').first().getByTestId('prefix-blocks')).toHaveText(/^\d[\d.]*( k)? \/ [1-9][\d.]*( k)?$/);
    // CUDA graph counters are zero on the CPU backend by definition; the panel still renders live.
    await expect(page.getByTestId('panel-graphs')).toBeVisible();
    await expect(page.getByTestId('stat-graph')).toBeVisible();
    if (E2E_TOPOLOGY !== 'colocated') {
      // Labelled axes, a column label per column, a value under the pointer.
      const heat = page.getByTestId('heatmap-A→F bytes');
      await expect(heat).toContainText('layer');
      await expect(heat).toContainText('rank × stage');
      const columns = heat.getByTestId('heatmap-columns');
      await expect(columns.locator('.heat-col-rank').first()).toHaveText('F0');
      await expect(columns.locator('.heat-col-rank').last()).toHaveText(`A${Number(/^(\d+)A/.exec(E2E_TOPOLOGY)?.[1] ?? 1) - 1}`);
      await heat.getByTestId('heatmap-canvas').hover({ position: { x: 5, y: 5 } });
      await expect(heat.getByTestId('heatmap-tip')).toHaveText(/^layer 0 · F0 s0: /);
    }
    // Serving numbers (tokens/s, requests) come from the attention ranks' serving stats; they are
    // recorded here and asserted by the last test, so a gap there does not hide the other checks.
    // The value updates at 10 Hz and can dip between reads: keep the very reading that matched.
    let tps = '';
    await expect
      .poll(async () => (tps = await page.getByTestId('stat-tps').innerText()), { timeout: 20_000 })
      .toMatch(/^[1-9][\d.]* tok\/s$/)
      .catch(() => undefined);
    serving = { tps, requests: await page.getByTestId('stat-requests').innerText() };
    await screenshot(page, 'dashboard');
  } finally {
    await load.stop();
  }
  expect(load.completed).toBeGreaterThan(0);
  // No lookups since: once the window has passed the rate is unknown ("–", not 0%), and the
  // ratio since start is the ranks' vllm:prefix_cache_hits_total / _queries_total as the
  // router's /metrics has them (a path apart from the metric snapshots the console draws).
  await expect(page.getByTestId('stat-prefix')).toHaveText('–', { timeout: 30_000 });
  const prom = await (await fetch(`${apiUrl}/metrics`)).text();
  const queried = counterSum(prom, 'vllm:prefix_cache_queries_total');
  const hit = counterSum(prom, 'vllm:prefix_cache_hits_total');
  expect(hit).toBeGreaterThan(0);
  await expect(page.getByTestId('stat-prefix-detail')).toContainText(`since start ${formatPercent(hit / queried)} · `);
  console.log(`prefix cache: ${hit} of ${queried} looked-up tokens hit; dashboard: ${await page.getByTestId('stat-prefix-detail').innerText()}`);
  await screenshot(page, 'dashboard-idle');
});

test('logs per rank, filterable', async () => {
  await openScreen(page, 'logs');
  await expect(page.getByTestId('logs-view')).not.toContainText('Select a rank', { timeout: 20_000 });
  await expect(page.getByTestId('logs-view').locator('div').first()).toBeVisible({ timeout: 20_000 });
  await page.getByTestId('logs-filter').fill('zzz-no-such-line');
  await expect(page.getByTestId('logs-view')).toContainText('No lines match');
  await page.getByTestId('logs-filter').fill('');
  await screenshot(page, 'logs');
});

test('a rank that dies is reported with its exit and last log lines', async () => {
  await openScreen(page, 'launch');
  const row = page.getByTestId('rank-ffn-0');
  const pid = Number(/pid (\d+)/.exec(await row.innerText())?.[1]);
  expect(pid).toBeGreaterThan(0);
  process.kill(pid, 'SIGKILL');
  await expect(page.getByTestId('launch-state')).toHaveText('failed', { timeout: 30_000 });
  await expect(row.getByTestId('rank-state')).toHaveText('failed');
  await expect(page.getByTestId('launch-failure')).toContainText(/ffn rank 0 on agent \S+ was killed by SIGKILL/);
  // The rest of the launch is stopped, and the console says what it stopped.
  await expect(page.getByTestId('launch-cleanup')).toContainText('Stopped the rest of the failed launch', { timeout: 30_000 });
  await expect(page.getByTestId('launch-cleanup')).toContainText('attention 0');
  await screenshot(page, 'launch-rank-died');
});

test('restart brings a failed topology back', async () => {
  await page.getByTestId('restart-button').click();
  await expect(page.getByTestId('launch-state')).toHaveText('running', { timeout: 90_000 });
  await expect(page.getByTestId('rank-ffn-0').getByTestId('rank-state')).toHaveText('ready');
});

test('stop the topology', async () => {
  await openScreen(page, 'launch');
  await page.getByTestId('stop-button').click();
  await expect(page.getByTestId('launch-state')).toHaveText('stopped', { timeout: 60_000 });
  await screenshot(page, 'launch-stopped');
  await openScreen(page, 'playground');
  await expect(page.getByTestId('playground-not-ready')).toHaveText(/The topology is stopped/);
  // The dashboard keeps the history, marked as such; the live numbers are gone.
  await openScreen(page, 'dashboard');
  await expect(page.getByTestId('dashboard-frozen')).toContainText('The topology is stopped: these are its last metrics');
  await expect(page.getByTestId('stat-step')).toHaveText('–');
  await expect(page.getByTestId('stat-tps')).toHaveText('–');
  await screenshot(page, 'dashboard-stopped');
});

test('a page with a wrong token says it is not connected, not that nothing runs', async ({ browser }) => {
  const other = await browser.newPage();
  try {
    await other.goto(session!.host.url.replace(/#token=.*/, '#token=wrong-token-0123456789'));
    await expect(other.getByTestId('link-banner')).toContainText('wrong or missing token');
    await expect(other.getByTestId('not-connected')).toContainText('not connected to the console host');
    await expect(other.getByTestId('launch-badge')).toHaveText('not connected');
    await expect(other.getByText('No topology is running')).toHaveCount(0);
    await screenshot(other, 'not-connected');
  } finally {
    await other.close();
  }
});

test('throughput and request counts reach the dashboard', () => {
  expect(serving, 'the dashboard test did not run').not.toBeNull();
  expect(serving!.tps, 'output tokens/s under load (attention ranks report serving stats in their metric snapshots)').toMatch(/^[1-9][\d.]* tok\/s$/);
  expect(serving!.requests).toMatch(/^\d+ \/ \d+$/);
});
