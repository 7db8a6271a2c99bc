/**
 * The Server screen against a real agent (CPU backend) and a console that holds an API
 * key: the endpoint and the key's state (the key shown only on request), a curl snippet
 * for the running topology and model that, run from here, returns 200, and the live
 * request log listing that request (endpoint, model, tokens, status, finish reason), the
 * console's own and the Playground's streamed one (with a TTFT), and a refused one;
 * a row opens the request and response bodies.
 */
import { execFileSync } from 'node:child_process';
import { expect, test, type Page } from '@playwright/test';
import { addAgent, chat, launchTopology, openScreen, screenshot } from '../support/flow.js';
import { startAgent, startConsole, type StartedAgent, type StartedConsole } from '../support/processes.js';

test.describe.configure({ mode: 'serial' });

/** The console's key (start's --api-key): every launch's API requires it. */
const KEY = 'e2e-server-key-0123456789abcdef';
const TOPOLOGY = '1A1F';

let agent: StartedAgent;
let host: StartedConsole;
let page: Page;
/** What the curl snippet got back. */
let answer: { id: string; model: string; choices: { finish_reason: string; message: { content: string } }[]; usage: { prompt_tokens: number; completion_tokens: number } };

/** Runs a curl snippet in bash with $AFD_API_KEY set to `key`: [HTTP status, body]. */
function runCurl(code: string, key: string): [number, string] {
  const out = execFileSync('bash', ['-c', `${code} -sS -w '\\n%{http_code}'`], { encoding: 'utf8', env: { PATH: process.env['PATH'] ?? '', HOME: process.env['HOME'] ?? '/', AFD_API_KEY: key }, timeout: 60_000 });
  const cut = out.lastIndexOf('\n');
  return [Number(out.slice(cut + 1)), out.slice(0, cut)];
}

const row = (endpoint: string) => page.locator(`[data-testid="request-row"][data-endpoint="${endpoint}"]`);

test.beforeAll(async ({ browser }) => {
  agent = await startAgent();
  host = await startConsole(['--no-agent', '--api-key', KEY]);
  page = await browser.newPage();
  page.on('pageerror', (e) => console.error(`[page error] ${e.message}`));
  await page.goto(host.url);
  await addAgent(page, agent.url, agent.token);
  await launchTopology(page, TOPOLOGY, 'server-');
});

test.afterAll(async () => {
  await page?.close();
  await host?.stop();
  await agent?.stop();
});

test('the server screen shows the endpoint, the key state (the key only on request) and code for the running topology', async () => {
  await openScreen(page, 'server');
  await expect(page.getByTestId('server-base-url')).toHaveText(/^http:\/\/127\.0\.0\.1:\d+\/v1$/);
  await expect(page.getByTestId('server-model')).not.toHaveText(/not known/);
  await expect(page.getByTestId('server-key-state')).toContainText('required: the console holds it');
  await expect(page.getByTestId('server-key-value')).toHaveCount(0);
  await expect(page.locator('body')).not.toContainText(KEY);
  await page.getByTestId('server-key-show').click();
  await expect(page.getByTestId('server-key-value')).toHaveText(KEY);
  await page.getByTestId('server-key-hide').click();
  await expect(page.getByTestId('server-key-value')).toHaveCount(0);
  const model = await page.getByTestId('server-model').innerText();
  const snippet = page.getByTestId('server-snippet');
  await expect(snippet).toHaveAttribute('data-language', 'curl');
  await expect(snippet).toContainText(`# ${TOPOLOGY} serving ${model}`);
  await expect(snippet).toContainText('Authorization: Bearer $AFD_API_KEY');
  for (const [language, text] of [['python', 'os.environ["AFD_API_KEY"]'], ['typescript', 'apiKey: process.env.AFD_API_KEY']] as const) {
    await page.getByTestId(`snippet-${language}`).check();
    await expect(snippet).toContainText(text);
    await expect(snippet).toContainText(`"${model}"`);
  }
  await page.getByTestId('snippet-curl').check();
  await screenshot(page, 'server');
});

test('the curl snippet, run from the test, returns 200; the request log lists it, and its row opens the bodies', async () => {
  const code = await page.getByTestId('server-snippet').innerText();
  const [status, body] = runCurl(code, KEY);
  expect(status, body).toBe(200);
  answer = JSON.parse(body) as typeof answer;
  expect(answer.usage.completion_tokens).toBeGreaterThan(0);
  const model = await page.getByTestId('server-model').innerText();
  expect(answer.model).toBe(model);
  const logged = row('/v1/chat/completions').first();
  await expect(logged).toBeVisible();
  await expect(logged.getByTestId('request-model')).toHaveText(model);
  await expect(logged.getByTestId('request-tokens')).toHaveText(`${answer.usage.prompt_tokens} / ${answer.usage.completion_tokens}`);
  await expect(logged.getByTestId('request-status')).toHaveText('200');
  await expect(logged.getByTestId('request-finish')).toHaveText(answer.choices[0]!.finish_reason);
  await expect(logged.getByTestId('request-ttft')).toHaveText('–'); // not a stream
  await expect(logged.getByTestId('request-duration')).toHaveText(/^\d[\d.]* (ms|s|µs)$/);
  // The console's own request: it read the served model when the launch ran.
  await expect(row('/v1/models').first().getByTestId('request-endpoint')).toHaveText('GET /v1/models');
  await logged.click();
  const detail = page.getByTestId('request-detail');
  await expect(detail.getByTestId('request-body')).toContainText('"content": "Say hello in one short sentence."');
  await expect(detail.getByTestId('response-body')).toContainText(`"id": "${answer.id}"`);
  await expect(detail.getByTestId('response-text')).toHaveCount(0);
  await expect(detail).not.toContainText(KEY);
  await screenshot(page, 'server-request');
  await page.getByTestId('request-detail-close').click();
  await expect(detail).toHaveCount(0);
});

test('a refused request and a streamed Playground reply are logged too', async () => {
  const [status] = runCurl(await page.getByTestId('server-snippet').innerText(), 'not-the-key');
  expect(status).toBe(401);
  const refused = page.locator('[data-testid="request-row"]').filter({ has: page.getByTestId('request-status').getByText('401') });
  await expect(refused).toHaveCount(1);
  await expect(refused.getByTestId('request-status')).toHaveAttribute('title', /missing or invalid API key/);
  await chat(page, 'Hello from the Playground.', 'server-');
  await openScreen(page, 'server');
  const streamed = row('/v1/chat/completions').filter({ hasText: '(stream)' }).first();
  await expect(streamed.getByTestId('request-status')).toHaveText('200');
  await expect(streamed.getByTestId('request-ttft')).toHaveText(/^\d[\d.]* (ms|s|µs)$/);
  await expect(streamed.getByTestId('request-tokens')).toHaveText(/^[1-9]\d* \/ [1-9]\d*$/);
  await streamed.click();
  await expect(page.getByTestId('response-text')).not.toHaveText('(no text)');
  await expect(page.getByTestId('response-body')).toContainText('data: [DONE]');
  await screenshot(page, 'server-stream');
});
