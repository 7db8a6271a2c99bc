/**
 * The console across two real hosts: network namespaces host-a and host-b run
 * `afd-agent serve` with TLS (a throwaway CA) and a token each; the console (browser
 * mode) and Chromium both run in a console namespace, so everything the page shows went
 * over the bed's network (agent/src/testing/netns). A delaying relay adds 2 ms to what
 * host-a (the FFN ranks) sends back on the AFD ports, and nothing the other way.
 *
 * A wrong CA, a wrong token and a host that is down are refused with what to do; both
 * agents connect; 2A2F launches with the FFN ranks on host-a and the attention ranks on
 * host-b; the playground streams; the dashboard's per-layer F→A wire time shows the delay
 * and its A→F wire time does not (the bed's hosts are network namespaces of one kernel,
 * so the ranks share a clock and the connector times each direction by itself); a
 * partition (host-a's link cut mid-reply) ends the reply with an error naming the FFN
 * peer, shows host-a unreachable and the attention ranks' lost peer, and once the link
 * is back the launch serves again; stopping leaves no rank running.
 *
 * Needs root and `ip netns` (CI runs as root); skipped with the reason otherwise.
 */
import { chromium, expect, test, type Browser, type Page } from '@playwright/test';
import { netnsSupport } from '../../agent/src/testing/netns/netnsSupport.js';
import { TwoHostBed, type RelayHandle } from '../../agent/src/testing/netns/TwoHostBed.js';
import { startCurlLoad } from '../../agent/src/testing/netns/bedClients.js';
import type { BedProcess } from '../../agent/src/testing/netns/BedProcess.js';
import { CHROMIUM_PATH } from '../playwright.config.js';
import { addAgent, openScreen, screenshot } from '../support/flow.js';
import { AFD_HOME, AGENT_SCRIPT, BENCH_SCRIPT, START_SCRIPT } from '../support/paths.js';

const support = await netnsSupport();
const delayMs = 2;

test.describe.configure({ mode: 'serial' });

let two: TwoHostBed;
let relay: RelayHandle;
let browser: Browser;
let consoleHost: BedProcess | undefined;
let page: Page;

/** Starts the console's browser-mode host in the console namespace; resolves with its page URL. */
async function startConsole(caFile: string): Promise<string> {
  await consoleHost?.stop();
  consoleHost = two.spawnInConsole('console web host', process.execPath, [START_SCRIPT, '--web', '--no-open', '--port', '0', '--no-agent', '--ca-file', caFile], { AFD_HOME });
  const line = await consoleHost.waitForLine(/console \(browser mode\): /, 60_000, 'the console URL');
  return line.slice(line.indexOf('http'));
}

async function openConsole(caFile: string): Promise<void> {
  const url = await startConsole(caFile);
  await page?.close();
  page = await browser.newPage();
  page.on('pageerror', (e) => console.error(`[page error] ${e.message}`));
  await page.goto(url);
}

const agentRow = (host: string) => page.getByTestId(`agent-row-${host}`);

test.describe(`two hosts${support.ok ? '' : ` (skipped: ${support.reason})`}`, () => {
  test.skip(!support.ok, support.ok ? '' : support.reason);

  test.beforeAll(async () => {
    test.setTimeout(180_000);
    two = await TwoHostBed.start({
      agentScript: AGENT_SCRIPT,
      benchScript: BENCH_SCRIPT,
      env: process.env['AFD_NATIVE_ADDON'] ? { AFD_NATIVE_ADDON: process.env['AFD_NATIVE_ADDON'] } : {},
      modelsHome: AFD_HOME,
    });
    relay = await two.startRelay('host-a', [29500, 29501], delayMs, 'from-target');
    // Chromium's network is the console namespace's: the page reaches only what that namespace reaches.
    browser = await chromium.launch({
      executablePath: two.bed.wrapperScript('console', CHROMIUM_PATH),
      args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
    });
  });

  test.afterAll(async () => {
    await page?.close().catch(() => undefined);
    await browser?.close().catch(() => undefined);
    await two?.teardown();
  });

  test('a console that trusts another CA says to pass the right one', async () => {
    await openConsole(two.pki.otherCaFile);
    const t0 = Date.now();
    await addAgent(page, two.url('host-a'), two.tokens.get('host-a')!);
    await expect(page.getByTestId('agents-error')).toContainText(/wss:\/\/host-a:7700 presented a TLS certificate that no CA this client trusts has signed .*--ca-file/);
    expect(Date.now() - t0).toBeLessThan(10_000);
    await screenshot(page, 'two-hosts-wrong-ca');
  });

  test('a wrong token and a host that is down are refused within seconds, saying why', async () => {
    await openConsole(two.pki.caFile);
    let t0 = Date.now();
    await addAgent(page, two.url('host-a'), two.tokens.get('host-b')!);
    await expect(page.getByTestId('agents-error')).toContainText(/wss:\/\/host-a:7700 rejected the token/);
    expect(Date.now() - t0).toBeLessThan(10_000);
    await two.bed.setLink('host-b', 'down');
    try {
      t0 = Date.now();
      await addAgent(page, two.url('host-b'), two.tokens.get('host-b')!);
      await expect(page.getByTestId('agents-error')).toContainText(/wss:\/\/host-b:7700 (is unreachable|did not (answer|complete the connection))/);
      expect(Date.now() - t0).toBeLessThan(15_000);
    } finally {
      await two.bed.setLink('host-b', 'up');
    }
    await expect(page.locator('[data-testid^="agent-row-"]')).toHaveCount(0);
  });

  test('connects both agents and launches 2A2F with the FFN ranks on host-a and the attention ranks on host-b', async () => {
    for (const h of ['host-a', 'host-b'] as const) {
      await addAgent(page, two.url(h), two.tokens.get(h)!);
      await expect(agentRow(h).getByTestId('agent-state')).toHaveText('connected');
    }
    await screenshot(page, 'two-hosts-agents');
    await openScreen(page, 'topology');
    await page.getByTestId('preset-2A2F').check();
    for (const r of ['ffn rank 0', 'ffn rank 1']) await page.getByLabel(`Device of ${r}`).selectOption('host-a|cpu|0');
    for (const r of ['attention rank 0', 'attention rank 1']) await page.getByLabel(`Device of ${r}`).selectOption('host-b|cpu|0');
    await expect(page.getByTestId('topology-ok')).toContainText('on 2 agents');
    await page.getByTestId('launch-button').click();
    await expect(page.getByTestId('launch-state')).toHaveText('running', { timeout: 120_000 });
    await expect(page.getByTestId('rank-ffn-0')).toContainText('host-a');
    await expect(page.getByTestId('rank-attention-1')).toContainText('host-b');
    // The API is host-b's front router at host-b's own address: what the console namespace reaches.
    await expect(page.getByTestId('router-url')).toHaveText(new RegExp(`^http://${two.bed.address('host-b').replace(/\./g, '\\.')}:\\d+/v1$`));
    await screenshot(page, 'two-hosts-launch');
  });

  test('the playground streams across the hosts', async () => {
    await openScreen(page, 'playground');
    await page.getByTestId('max-tokens').fill('32');
    await page.getByTestId('temperature').fill('0');
    await page.getByTestId('chat-input').fill('Hello across two hosts');
    await page.getByTestId('chat-send').click();
    const reply = page.getByTestId('msg-assistant').last();
    await expect(reply).toHaveAttribute('data-stage', 'decode', { timeout: 60_000 });
    await expect(reply).toHaveAttribute('data-stage', /done|stopped/, { timeout: 90_000 });
    await expect(reply.getByTestId('msg-stats')).toContainText(/ITL \d/);
    await screenshot(page, 'two-hosts-playground');
  });

  test(`the dashboard's per-layer wire time shows the ${delayMs} ms F→A delay in F→A only`, async () => {
    await openScreen(page, 'launch');
    const api = (await page.getByTestId('router-url').innerText()).replace(/\/v1$/, '');
    const load = startCurlLoad(two, api);
    try {
      await openScreen(page, 'dashboard');
      const a2f = page.getByTestId('heatmap-A→F wire time');
      const f2a = page.getByTestId('heatmap-F→A wire time');
      // "max 2.21 ms · total 35.4 ms": the mean over the cells that have a sample (every
      // rank and layer; sampled steps come every 8th step).
      const meanMs = async (heat: typeof a2f): Promise<number> => {
        const total = /total ([\d.]+) (µs|ms|s)\b/.exec(await heat.innerText());
        const cells = Number(await heat.getAttribute('data-nonzero'));
        if (!total || cells === 0) return 0;
        const ms = Number(total[1]) * ({ µs: 1e-3, ms: 1, s: 1000 } as Record<string, number>)[total[2]!]!;
        return ms / cells;
      };
      // One kernel under both namespaces: each direction is timed by itself, and says so.
      await expect(a2f).toHaveAttribute('data-note', /^one-way: /, { timeout: 60_000 });
      await expect(f2a).toHaveAttribute('data-note', /^one-way: /);
      await expect.poll(() => meanMs(f2a), { timeout: 60_000 }).toBeGreaterThanOrEqual(delayMs * 0.9);
      await expect.poll(() => meanMs(a2f), { timeout: 30_000 }).toBeGreaterThan(0);
      const [a2fMs, f2aMs] = [await meanMs(a2f), await meanMs(f2a)];
      console.log(
        `dashboard wire time: A→F ${/max [^\n]+/.exec(await a2f.innerText())?.[0]}, mean ${a2fMs.toFixed(2)} ms; ` +
          `F→A ${/max [^\n]+/.exec(await f2a.innerText())?.[0]}, mean ${f2aMs.toFixed(2)} ms over ${await f2a.getAttribute('data-nonzero')} cells ` +
          `(relay, F→A only: ${JSON.stringify(await relay.stats())})`,
      );
      // The delayed direction carries the delay, over what the other shows. (A->F alone is not
      // bounded by the delay: on a loaded box bytes wait in the FFN's socket while it computes,
      // and that counts as wire time: 0.2 ms mean on a quiet run, 2.9 ms once on CI's.)
      expect(f2aMs - a2fMs).toBeGreaterThanOrEqual(delayMs * 0.6);
      // DBO is off in this launch: only s0 columns, and the panel says why.
      await expect(page.getByTestId('dbo-off-stages')).toContainText('Stage s1 unused (DBO off)');
      await screenshot(page, 'two-hosts-dashboard');
    } finally {
      await load.stop();
    }
  });

  test('a partition mid-reply: an error naming the FFN peer, host-a unreachable, then recovery once the link is back', async () => {
    test.setTimeout(240_000);
    await openScreen(page, 'playground');
    await page.getByTestId('max-tokens').fill('4000');
    await page.getByTestId('chat-input').fill('Tell me a very long story');
    await page.getByTestId('chat-send').click();
    const reply = page.getByTestId('msg-assistant').last();
    await expect(reply).toHaveAttribute('data-stage', 'decode', { timeout: 60_000 });
    await two.bed.setLink('host-a', 'down');
    try {
      const t0 = Date.now();
      // The step deadline (5 s by default) ends the reply with the peer's name.
      await expect(reply).toHaveAttribute('data-stage', 'error', { timeout: 20_000 });
      await expect(reply.getByTestId('msg-error')).toContainText(/FFN rank [01] at host-a:2950[01]/);
      console.log(`partition: the reply failed ${((Date.now() - t0) / 1000).toFixed(1)} s after the cut`);
      await screenshot(page, 'two-hosts-partition-reply');
      await openScreen(page, 'agents');
      await expect(agentRow('host-a').getByTestId('agent-state')).toHaveText('unreachable', { timeout: 15_000 });
      await expect(agentRow('host-a')).toContainText(/has not answered .* the network is cut or the host is down/);
      await expect(agentRow('host-b').getByTestId('agent-state')).toHaveText('connected');
      await screenshot(page, 'two-hosts-partition-agents');
      await openScreen(page, 'launch');
      await expect(page.getByTestId('rank-attention-0').or(page.getByTestId('rank-attention-1')).filter({ hasText: /lost FFN rank [01] at host-a/ }).first()).toBeVisible({ timeout: 20_000 });
      const degraded = page.getByTestId('launch-degraded');
      await expect(degraded).toContainText('agent host-a is unreachable');
      await expect(degraded).toContainText(/attention [01] on host-b is not serving: lost FFN rank [01] at host-a/);
      await screenshot(page, 'two-hosts-partition-launch');
    } finally {
      await two.bed.setLink('host-a', 'up');
    }
    await openScreen(page, 'agents');
    await expect(agentRow('host-a').getByTestId('agent-state')).toHaveText('connected', { timeout: 40_000 });
    await openScreen(page, 'launch');
    await expect(page.getByTestId('rank-table')).not.toContainText('lost FFN rank', { timeout: 40_000 });
    await expect(page.getByTestId('launch-state')).toHaveText('running');
    await expect(page.getByTestId('launch-degraded')).toHaveCount(0);
    // New requests succeed.
    await openScreen(page, 'playground');
    await page.getByTestId('max-tokens').fill('16');
    await page.getByTestId('chat-input').fill('Are you back?');
    await page.getByTestId('chat-send').click();
    await expect(page.getByTestId('msg-assistant').last()).toHaveAttribute('data-stage', /done|stopped/, { timeout: 90_000 });
    await screenshot(page, 'two-hosts-recovered');
  });

  test('stop: every rank on both hosts exits', async () => {
    await openScreen(page, 'launch');
    await page.getByTestId('stop-button').click();
    await expect(page.getByTestId('launch-state')).toHaveText('stopped', { timeout: 60_000 });
    for (const h of ['host-a', 'host-b'] as const) {
      await expect.poll(async () => (await two.bed.pids(h)).length, { timeout: 20_000 }).toBe(1); // the agent alone
    }
  });
});
