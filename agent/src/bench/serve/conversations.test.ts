/** The multi-turn dataset: token-exact lengths, the shared system prompt, the history each turn resends. */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { qwenTokenizer } from '../../serving/testing/qwenTokenizer.js';
import { startTestServer, type TestServer } from '../../serving/testing/testServer.js';
import { buildConversations, checkLengths, oneTokenWords, tokenizeCounter, turnMessages, type MultiTurnShape, type TokenCounter } from './conversations.js';
import { WORDS } from './randomPrompts.js';

const shape: MultiTurnShape = { sharedPrefixLen: 300, numConversations: 4, turns: 3, turnInputLen: 25, turnOutputLen: 5 };
/** A counter over the Qwen3 tokenizer in this process (what the test server's /tokenize answers). */
const qwenCount: TokenCounter = async (text) => (await qwenTokenizer()).encode(text, false).length;

describe('buildConversations', () => {
  it('makes texts of exactly the asked token counts in the served tokenizer, deterministic per seed', async () => {
    const words = await oneTokenWords(qwenCount);
    const d = buildConversations(shape, words, 5);
    expect(await qwenCount(d.systemPrompt)).toBe(300);
    expect(d.userTurns).toHaveLength(4);
    for (const turns of d.userTurns) {
      expect(turns).toHaveLength(3);
      for (const u of turns) expect(await qwenCount(u)).toBe(25);
    }
    await expect(checkLengths(d, shape, qwenCount)).resolves.toBeUndefined();
    expect(buildConversations(shape, words, 5)).toEqual(d);
    expect(buildConversations(shape, words, 6).systemPrompt).not.toBe(d.systemPrompt);
    // Every user message differs: only the system prompt is shared between conversations.
    expect(new Set(d.userTurns.flat()).size).toBe(12);
  });

  it('checkLengths names a text whose count differs', async () => {
    const d = buildConversations(shape, WORDS, 1);
    await expect(checkLengths(d, shape, async (t) => (await qwenCount(t)) + (t === d.userTurns[1]![0] ? 1 : 0))).rejects.toThrow('user message 4 is 26 tokens in the served tokenizer, not 25');
    await expect(checkLengths(d, shape, async () => 7)).rejects.toThrow('the system prompt is 7 tokens');
  });

  it('oneTokenWords keeps the words that are one token with their space', async () => {
    expect(await oneTokenWords(qwenCount)).toEqual(WORDS);
    // A tokenizer that splits words of more than five letters in two:
    const words = await oneTokenWords(async (t) => t.trim().split(' ').reduce((n, w) => n + (w.length > 5 ? 2 : 1), 0));
    expect(words.length).toBeGreaterThan(16);
    expect(words.every((w) => w.length <= 5)).toBe(true);
    await expect(oneTokenWords(async () => 2)).rejects.toThrow(/only 0 of \d+ words are one token/);
  });
});

describe('turnMessages', () => {
  it('starts every conversation with the one system prompt and appends each answer before the next user message', () => {
    const d = buildConversations({ ...shape, sharedPrefixLen: 5, turnInputLen: 3 }, WORDS, 2);
    const [a, b] = d.userTurns;
    expect(turnMessages(d.systemPrompt, a!, [])).toEqual([
      { role: 'system', content: d.systemPrompt },
      { role: 'user', content: a![0] },
    ]);
    expect(turnMessages(d.systemPrompt, b!, [])[0]).toEqual({ role: 'system', content: d.systemPrompt });
    expect(turnMessages(d.systemPrompt, a!, ['first answer', 'second answer'])).toEqual([
      { role: 'system', content: d.systemPrompt },
      { role: 'user', content: a![0] },
      { role: 'assistant', content: 'first answer' },
      { role: 'user', content: a![1] },
      { role: 'assistant', content: 'second answer' },
      { role: 'user', content: a![2] },
    ]);
    expect(() => turnMessages(d.systemPrompt, a!, ['1', '2', '3'])).toThrow('turn 4 of a conversation of 3 turns');
  });
});

describe('tokenizeCounter', () => {
  let srv: TestServer;
  beforeAll(async () => {
    srv = await startTestServer();
  });
  afterAll(() => srv.close());

  it("counts with the server's /tokenize, and is null where the server has none", async () => {
    const count = await tokenizeCounter(srv.url, undefined);
    expect(count).not.toBeNull();
    expect(await count!(' time year people')).toBe(3);
    await expect(count!('')).resolves.toBe(0);
    let status = 404;
    const bare = createServer((_req, res) => res.writeHead(status).end('no such route'));
    await new Promise<void>((r) => bare.listen(0, '127.0.0.1', r));
    const bareUrl = `http://127.0.0.1:${(bare.address() as AddressInfo).port}`;
    try {
      expect(await tokenizeCounter(bareUrl, undefined)).toBeNull();
      status = 500;
      await expect(tokenizeCounter(bareUrl, undefined)).rejects.toThrow('tokenize failed with HTTP 500: no such route');
    } finally {
      await new Promise((r) => bare.close(r));
    }
  });
});
