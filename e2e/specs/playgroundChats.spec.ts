/**
 * The Playground's chats (issue 43, item 7) in the real renderer served by the real
 * browser-mode host, with replies from a scripted console service (support/scriptedConsole.ts)
 * so their text is known: the chat list's search finds a chat by a word of its reply;
 * exporting every chat as JSON and importing the file back gives the same chats, and a
 * file that is not a chats file is refused with the reason; a raw completion cut by max
 * tokens offers Continue, which sends the prompt plus the reply and appends what comes; so
 * does a chat reply, sent back as the final assistant message with vLLM's
 * continue_final_message; stop strings (one a line, \n escapes), min-p and the repetition
 * penalty go with the request; the token view shows each token with its probability and the
 * alternatives on hover; a chat with its own sampling and system prompt sends them while the
 * others keep the defaults.
 */
import { readFile } from 'node:fs/promises';
import { expect, test, type Page } from '@playwright/test';
import type { BridgePush, BridgeRequest } from '@afd/shared';
import { openScreen, screenshot } from '../support/flow.js';
import { startConsole, type StartedConsole } from '../support/processes.js';
import { routeScriptedConsole, type ScriptedConsole, type ScriptStep } from '../support/scriptedConsole.js';

test.describe.configure({ mode: 'serial' });

/** Reply text (and finish reason, default stop) to a chat message or a raw prompt. */
const REPLIES: Record<string, { text: string; finishReason?: 'length' }> = {
  'What is a castle?': { text: 'A fort with towers, walls and a moat around it.' },
  'What is a river?': { text: 'Fresh water flowing to the sea.' },
  'Once upon': { text: ' a time', finishReason: 'length' },
  'Once upon a time': { text: ' there was a castle.' },
  // Chat: a story cut by max tokens, and its continuation (asked with the cut reply last).
  'Tell me a story': { text: 'Once upon a', finishReason: 'length' },
  'Once upon a': { text: ' time, a castle.' },
};

/** Scripted log-probabilities: one token a word, the first alternative " and". */
function tokensOf(text: string): NonNullable<BridgePush<'chat.delta'>['tokens']> {
  return (text.match(/\s*\S+/g) ?? []).map((token, i) => ({ token, logprob: -0.2 * (i + 1), top: [{ token, logprob: -0.2 * (i + 1) }, { token: ' and', logprob: -3 }] }));
}

function reply(request: BridgeRequest<'chat.start'>): ScriptStep[] {
  const asked = request.mode === 'chat' ? (request.messages.at(-1)?.content ?? '') : request.prompt;
  const { text, finishReason = 'stop' } = REPLIES[typeof asked === 'string' ? asked : ''] ?? { text: 'I do not know.' };
  const tokens = request.sampling.topLogprobs !== null ? { tokens: tokensOf(text) } : {};
  return [
    { channel: 'chat.accepted', payload: { sinceStartMs: 5, model: 'scripted-model' } },
    { channel: 'chat.delta', payload: { text, ...tokens, stage: 'decode', timings: { sinceStartMs: 30, sincePrevMs: 10 } } },
    { channel: 'chat.done', payload: { finishReason, usage: { promptTokens: 10, completionTokens: 12 }, timings: { ttftMs: 30, totalMs: 50, tokensPerSecond: 100 } } },
  ];
}

let host: StartedConsole;
let page: Page;
let service: ScriptedConsole;

test.beforeAll(async ({ browser }) => {
  host = await startConsole();
  page = await browser.newPage({ acceptDownloads: true });
  service = await routeScriptedConsole(page, reply);
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

const titles = () => page.getByTestId('conversation').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-title')));

test('search finds a chat by a word of its reply', async () => {
  await ask('What is a castle?');
  await page.getByTestId('chat-new').click();
  await ask('What is a river?');
  expect(await titles()).toEqual(['What is a river?', 'What is a castle?']);
  const search = page.getByTestId('chat-search');
  await search.fill('MOAT');
  await expect(page.getByTestId('conversation')).toHaveCount(1);
  expect(await titles()).toEqual(['What is a castle?']);
  await search.fill('river sea');
  expect(await titles()).toEqual(['What is a river?']);
  await search.fill('zebra');
  await expect(page.getByTestId('conversation')).toHaveCount(0);
  await expect(page.getByTestId('chat-search-empty')).toBeVisible();
  await search.press('Escape');
  await expect(page.getByTestId('conversation')).toHaveCount(2);
  expect(service.violations).toEqual([]);
});

test('exporting every chat and importing the file back gives the same chats; a bad file is refused', async () => {
  // The chat on screen alone.
  const downloadingOne = page.waitForEvent('download');
  await page.getByTestId('chat-export').click();
  const one = await downloadingOne;
  expect(one.suggestedFilename()).toMatch(/^afd-What-is-a-river-\d{4}-\d\d-\d\d\.json$/);
  const oneFile = JSON.parse(await readFile((await one.path())!, 'utf8')) as { conversations: { title: string }[] };
  expect(oneFile.conversations.map((c) => c.title)).toEqual(['What is a river?']);

  const downloading = page.waitForEvent('download');
  await page.getByTestId('chat-export-all').click();
  const download = await downloading;
  expect(download.suggestedFilename()).toMatch(/^afd-chats-\d{4}-\d\d-\d\d\.json$/);
  const fileText = await readFile((await download.path())!, 'utf8');
  const file = JSON.parse(fileText) as { format: string; conversations: { title: string; messages: { content: string }[] }[] };
  expect(file.format).toBe('afd-chats');
  const exported = file.conversations.map((c) => [c.title, c.messages.map((m) => m.content)]);
  expect(exported).toHaveLength(2);

  // Delete both (two clicks each); one empty chat is left.
  for (let i = 0; i < 2; i++) {
    const row = page.getByTestId('conversation').first();
    await row.getByTestId('conversation-delete').click();
    await row.getByTestId('conversation-delete').click();
  }
  await expect(page.getByTestId('conversation')).toHaveCount(1);
  await expect(page.getByTestId('msg-assistant')).toHaveCount(0);

  await page.getByTestId('chat-import-file').setInputFiles({ name: 'chats.json', mimeType: 'application/json', buffer: Buffer.from(fileText) });
  await expect(page.getByTestId('conversation')).toHaveCount(2);
  expect(await titles()).toEqual(file.conversations.map((c) => c.title));
  // The first chat of the file is open, with its messages.
  await expect(page.getByTestId('msg-assistant')).toHaveCount(1);
  await expect(page.getByTestId('msg-assistant')).toContainText(file.conversations[0]!.messages[1]!.content);
  await screenshot(page, 'playground-chats-imported');

  await page.getByTestId('chat-import-file').setInputFiles({ name: 'notes.json', mimeType: 'application/json', buffer: Buffer.from('{"notes": []}') });
  await expect(page.getByTestId('chat-error')).toContainText('cannot import the file at format: not a chats file');
  await expect(page.getByTestId('conversation')).toHaveCount(2);
  expect(service.violations).toEqual([]);
});

test('Continue shows only on a raw completion cut by max tokens, and extends it', async () => {
  await page.getByTestId('chat-new').click();
  await page.getByTestId('mode-completion').check();
  await ask('Once upon');
  const replyMsg = page.getByTestId('msg-assistant');
  await expect(replyMsg).toHaveCount(1);
  await expect(replyMsg.getByTestId('msg-finish')).toContainText('length');
  await replyMsg.getByTestId('msg-continue').click();
  await expect(replyMsg).toHaveAttribute('data-stage', 'done');
  await expect(replyMsg).toContainText('a time there was a castle.');
  expect(service.chats.at(-1)).toMatchObject({ mode: 'completion', prompt: 'Once upon a time' });
  // It ended with stop now (no finish badge): no more Continue, and none on chat replies that stopped on their own.
  await expect(replyMsg.getByTestId('msg-finish')).toHaveCount(0);
  await expect(page.getByTestId('msg-continue')).toHaveCount(0);
  await page.getByTestId('conversation-open').filter({ hasText: 'What is a castle?' }).click();
  await expect(page.getByTestId('msg-assistant')).toHaveCount(1);
  await expect(page.getByTestId('msg-continue')).toHaveCount(0);
  expect(service.violations).toEqual([]);
});

test("a chat's own sampling and system prompt go with it; other chats keep the defaults", async () => {
  await page.getByTestId('mode-chat').check();
  await page.getByTestId('chat-new').click();
  await page.getByTestId('system-prompt').fill('Be brief.');
  await page.getByTestId('chat-own-settings').check();
  await expect(page.getByTestId('settings-scope')).toContainText('this chat only');
  await page.getByTestId('max-tokens').fill('7');
  await page.getByTestId('system-prompt').fill('Talk like a pirate.');
  await ask('What is a river?');
  expect(service.chats.at(-1)).toMatchObject({ mode: 'chat', messages: [{ role: 'system', content: 'Talk like a pirate.' }, { role: 'user' }], sampling: { maxTokens: 7 } });

  await page.getByTestId('chat-new').click();
  await expect(page.getByTestId('chat-own-settings')).not.toBeChecked();
  await expect(page.getByTestId('max-tokens')).toHaveValue('128');
  await expect(page.getByTestId('system-prompt')).toHaveValue('Be brief.');
  await ask('What is a castle?');
  expect(service.chats.at(-1)).toMatchObject({ messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user' }], sampling: { maxTokens: 128 } });

  await page.getByTestId('conversation-open').filter({ hasText: 'What is a river?' }).first().click();
  await expect(page.getByTestId('chat-own-settings')).toBeChecked();
  await expect(page.getByTestId('max-tokens')).toHaveValue('7');
  await screenshot(page, 'playground-chat-own-settings');
  expect(service.violations).toEqual([]);
});

test('Continue extends a chat reply cut by max tokens (continue_final_message); the token view shows each token with its alternatives on hover', async () => {
  await page.getByTestId('mode-chat').check();
  await page.getByTestId('chat-new').click();
  await page.getByTestId('token-view-toggle').check();
  await page.getByTestId('stop-strings').fill('THE END\n\\n\\n');
  await page.getByTestId('min-p').fill('0.05');
  await page.getByTestId('repetition-penalty').fill('1.1');
  await ask('Tell me a story');
  expect(service.chats.at(-1)).toMatchObject({ mode: 'chat', sampling: { topLogprobs: 5, stop: ['THE END', '\n\n'], minP: 0.05, repetitionPenalty: 1.1, presencePenalty: 0 } });
  const replyMsg = page.getByTestId('msg-assistant');
  await expect(replyMsg.getByTestId('msg-finish')).toContainText('length');
  const tokens = replyMsg.getByTestId('token');
  await expect(tokens).toHaveText(['Once', ' upon', ' a']);
  await expect(tokens.nth(1)).toHaveAttribute('title', ['" upon"  67.0%  (logprob -0.400)', 'top alternatives:', '▸ " upon"  67.0%', '  " and"  5.0%'].join('\n'));

  await replyMsg.getByTestId('msg-continue').click();
  await expect(replyMsg).toHaveAttribute('data-stage', 'done');
  const sent = service.chats.at(-1)!;
  expect(sent).toMatchObject({ mode: 'chat', continue_final_message: true, add_generation_prompt: false });
  expect(sent.mode === 'chat' && sent.messages.map((m) => [m.role, m.content])).toEqual([
    ['system', 'Be brief.'],
    ['user', 'Tell me a story'],
    ['assistant', 'Once upon a'],
  ]);
  // One reply, grown by the continuation's text and tokens; it stopped on its own this time.
  await expect(replyMsg).toHaveCount(1);
  await expect(tokens).toHaveText(['Once', ' upon', ' a', ' time,', ' a', ' castle.']);
  await expect(replyMsg.getByTestId('msg-finish')).toHaveCount(0);
  await expect(replyMsg.getByTestId('msg-continue')).toHaveCount(0);
  await tokens.nth(5).hover();
  await screenshot(page, 'playground-chat-continued-tokens');

  // Token view off: the reply reads as text again (its tokens stay with it).
  await page.getByTestId('token-view-toggle').uncheck();
  await expect(tokens).toHaveCount(0);
  await expect(replyMsg.getByTestId('msg-content')).toHaveText('Once upon a time, a castle.');
  expect(service.violations).toEqual([]);
});
