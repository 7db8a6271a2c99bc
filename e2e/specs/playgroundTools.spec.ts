/**
 * The Playground's structured output and tools, in the real renderer served by the real
 * browser-mode host, against a scripted console service (support/scriptedConsole.ts: the
 * topology API's tool calling is built on other branches, so replies are scripted in
 * OpenAI's streamed shape): the response format and tools boxes check what is typed;
 * a send carries response_format, tools, tool_choice and parallel_tool_calls; streamed
 * tool calls show as cards while they stream; results typed on the cards continue the
 * chat with the calls and results in the history; the request shows as curl and Python.
 */
import { expect, test, type Page } from '@playwright/test';
import type { BridgeRequest } from '@afd/shared';
import { openScreen, screenshot } from '../support/flow.js';
import { startConsole, type StartedConsole } from '../support/processes.js';
import { routeScriptedConsole, type ScriptedConsole, type ScriptStep } from '../support/scriptedConsole.js';

test.describe.configure({ mode: 'serial' });

let host: StartedConsole;
let page: Page;
let service: ScriptedConsole;
/** Holds the first call's last fragment back until the spec has seen the call streaming. */
let releaseStream: () => void = () => undefined;

const timings = (ms: number) => ({ sinceStartMs: ms, sincePrevMs: 10 });
const usage = { promptTokens: 40, completionTokens: 24 };

/** Two calls, get_weather(city) and get_time(timezone), streamed in fragments; the stream waits at `gate` mid-way. */
function toolCallReply(gate: Promise<void>): ScriptStep[] {
  return [
    { channel: 'chat.accepted', payload: { sinceStartMs: 5, model: 'scripted-model' } },
    { channel: 'chat.delta', payload: { text: '', stage: 'prefill', toolCalls: [{ index: 0, id: 'call_w1', type: 'function', function: { name: 'get_weather', arguments: '' } }], timings: timings(30) } },
    { channel: 'chat.delta', payload: { text: '', stage: 'decode', toolCalls: [{ index: 0, function: { arguments: '{"city": ' } }], timings: timings(40) } },
    { gate, channel: 'chat.delta', payload: { text: '', stage: 'decode', toolCalls: [{ index: 0, function: { arguments: '"Paris"}' } }], timings: timings(50) } },
    { channel: 'chat.delta', payload: { text: '', stage: 'decode', toolCalls: [{ index: 1, id: 'call_t2', type: 'function', function: { name: 'get_time', arguments: '{"timezone": "Europe/Paris"}' } }], timings: timings(60) } },
    { channel: 'chat.done', payload: { finishReason: 'tool_calls', usage, timings: { ttftMs: 30, totalMs: 70, tokensPerSecond: 100 } } },
  ];
}

const ANSWER = 'Sunny and 18 C in Paris; it is 14:05 there.';

function textReply(): ScriptStep[] {
  return [
    { channel: 'chat.accepted', payload: { sinceStartMs: 5, model: 'scripted-model' } },
    { channel: 'chat.delta', payload: { text: 'Sunny and 18 C in Paris;', stage: 'prefill', timings: timings(30) } },
    { channel: 'chat.delta', payload: { text: ' it is 14:05 there.', stage: 'decode', timings: timings(40) } },
    { channel: 'chat.done', payload: { finishReason: 'stop', usage, timings: { ttftMs: 30, totalMs: 50, tokensPerSecond: 100 } } },
  ];
}

test.beforeAll(async ({ browser }) => {
  host = await startConsole();
  const context = await browser.newContext({ permissions: ['clipboard-read', 'clipboard-write'] });
  page = await context.newPage();
  const gate = new Promise<void>((r) => (releaseStream = r));
  service = await routeScriptedConsole(page, (request) => {
    const last = request.mode === 'chat' ? request.messages.at(-1) : undefined;
    return last?.role === 'tool' ? textReply() : toolCallReply(gate);
  });
  await page.goto(host.url);
  await openScreen(page, 'playground');
});

test.afterAll(async () => {
  releaseStream();
  await page?.context().close();
  await host?.stop();
});

test('the response format box checks the schema as it is typed', async () => {
  const format = page.getByRole('radiogroup', { name: 'Response format' });
  await format.getByRole('radio', { name: 'JSON schema' }).check();
  const schema = page.getByRole('textbox', { name: /JSON schema/ });
  await schema.fill('{"type": "object", "properties": {');
  await expect(schema).toHaveAttribute('aria-invalid', 'true');
  await expect(page.getByTestId('response-format').getByRole('alert')).toContainText('not valid JSON');
  await schema.fill('[]');
  await expect(page.getByTestId('response-format').getByRole('alert')).toHaveText('a JSON schema is a JSON object, not an array');
  await page.getByRole('button', { name: 'Sample schema' }).click();
  await expect(schema).toHaveAttribute('aria-invalid', 'false');
  await expect(page.getByTestId('schema-status')).toHaveText('Valid JSON.');
  await page.getByRole('textbox', { name: 'Schema name' }).fill('weather_report');
});

test('the tools box reads a list of functions; the tool choice offers each', async () => {
  const tools = page.getByRole('textbox', { name: /Functions/ });
  await tools.fill('[{"type": "function", "function": {"name": "get weather"}}]');
  await expect(page.getByTestId('tools').getByRole('alert')).toContainText('tools[0].function.name');
  await page.getByRole('button', { name: 'Sample tools' }).click();
  await expect(page.getByTestId('tools-status')).toHaveText('2 functions: get_weather, get_time');
  const choice = page.getByRole('combobox', { name: 'Tool choice' });
  await expect(choice.getByRole('option')).toHaveText(['auto', 'none', 'required', 'function: get_weather', 'function: get_time']);
  await choice.selectOption('required');
  await page.getByRole('checkbox', { name: 'Parallel tool calls' }).uncheck();
});

test('a send carries the format and tools; the calls show as cards while they stream', async () => {
  await page.getByTestId('chat-input').fill('Weather and time in Paris?');
  await page.getByTestId('chat-send').click();
  const reply = page.getByTestId('msg-assistant').last();
  const weather = reply.getByRole('region', { name: 'Tool call get_weather' });
  // Held mid-stream: the card shows the call with the arguments so far.
  await expect(weather.getByTestId('tool-call-args')).toHaveText('{"city":');
  await expect(reply).toHaveAttribute('data-stage', 'decode');
  await expect(weather.getByTestId('tool-call-id')).toHaveText('call_w1');
  releaseStream();
  await expect(reply).toHaveAttribute('data-stage', 'done');
  await expect(reply.getByTestId('msg-finish')).toHaveText('tool_calls');
  await expect(weather.getByLabel('Arguments of get_weather')).toHaveText('{\n  "city": "Paris"\n}');
  await expect(reply.getByRole('region', { name: 'Tool call get_time' }).getByTestId('tool-call-args')).toHaveText('{\n  "timezone": "Europe/Paris"\n}');
  const sent = service.chats[0] as Extract<BridgeRequest<'chat.start'>, { mode: 'chat' }>;
  expect(sent.response_format).toMatchObject({ type: 'json_schema', json_schema: { name: 'weather_report', strict: true, schema: { type: 'object', required: ['city', 'temperature_c', 'conditions'] } } });
  expect(sent.tools?.map((t) => t.function.name)).toEqual(['get_weather', 'get_time']);
  expect(sent.tool_choice).toBe('required');
  expect(sent.parallel_tool_calls).toBe(false);
  await screenshot(page, 'playground-tool-calls');
});

test('results typed on the cards continue the chat, with the calls and results in the history', async () => {
  const reply = page.getByTestId('msg-assistant').last();
  await reply.getByRole('textbox', { name: 'Result of get_weather (call_w1)' }).fill('{"temperature_c": 18, "conditions": "sunny"}');
  await reply.getByRole('button', { name: 'Send the result of get_weather' }).click();
  await expect(page.getByTestId('msg-tool')).toHaveCount(1);
  await expect(page.getByTestId('tool-calls-waiting')).toHaveText('1 of 2 calls wait for a result; the chat continues when each has one.');
  expect(service.chats).toHaveLength(1);
  await reply.getByRole('textbox', { name: 'Result of get_time (call_t2)' }).fill('14:05');
  await reply.getByRole('textbox', { name: 'Result of get_time (call_t2)' }).press('Enter');
  await expect(page.getByTestId('msg-assistant').last().getByTestId('msg-content')).toHaveText(ANSWER);
  await expect(page.getByTestId('msg-tool').getByTestId('tool-result-of')).toHaveText(['get_weather · call_w1', 'get_time · call_t2']);
  const sent = service.chats[1] as Extract<BridgeRequest<'chat.start'>, { mode: 'chat' }>;
  expect(sent.messages).toEqual([
    { role: 'user', content: 'Weather and time in Paris?' },
    {
      role: 'assistant',
      content: null,
      tool_calls: [
        { id: 'call_w1', type: 'function', function: { name: 'get_weather', arguments: '{"city": "Paris"}' } },
        { id: 'call_t2', type: 'function', function: { name: 'get_time', arguments: '{"timezone": "Europe/Paris"}' } },
      ],
    },
    { role: 'tool', content: '{"temperature_c": 18, "conditions": "sunny"}', tool_call_id: 'call_w1' },
    { role: 'tool', content: '14:05', tool_call_id: 'call_t2' },
  ]);
  // The answered calls take no more results.
  await expect(page.getByTestId('tool-result-input')).toHaveCount(0);
});

test('the request shows as curl and Python, with the format, the tools and the tool turns', async () => {
  await page.getByTestId('chat-input').fill('And tomorrow?');
  await page.getByText('Request as code').click();
  const code = page.getByLabel('Request code', { exact: true });
  await expect(code).toContainText('curl http://127.0.0.1:18000/v1/chat/completions');
  for (const s of ['"model": "scripted-model"', '"response_format": {', '"type": "json_schema"', '"strict": true', '"tools": [', '"tool_choice": "required"', '"parallel_tool_calls": false', '"role": "tool"', '"tool_call_id": "call_t2"', '"content": "And tomorrow?"']) {
    await expect(code).toContainText(s);
  }
  await page.getByRole('radiogroup', { name: 'Code language' }).getByRole('radio', { name: 'Python' }).check();
  await expect(code).toContainText('completion = client.chat.completions.create(');
  await expect(code).toContainText('parallel_tool_calls=False,');
  await expect(code).toContainText('"tool_call_id": "call_w1"');
  await screenshot(page, 'playground-request-code');
  expect(service.violations).toEqual([]);
});

test('with the schema and tools boxes filled, the composer and Send stay above the fold at 1280x720 and 1920x1080', async () => {
  for (const [width, height] of [[1280, 720], [1920, 1080]] as const) {
    await page.setViewportSize({ width, height });
    await openScreen(page, 'playground');
    for (const id of ['chat-input', 'chat-send']) {
      const box = await page.getByTestId(id).boundingBox();
      expect(box, `${id} at ${width}x${height}`).not.toBeNull();
      expect(box!.y + box!.height, `${id} bottom at ${width}x${height}`).toBeLessThanOrEqual(height);
    }
    await screenshot(page, `playground-tools-${width}x${height}`);
  }
});
