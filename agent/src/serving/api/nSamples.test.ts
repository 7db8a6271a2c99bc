/**
 * `n` samples per prompt through the official `openai` client (fake engine whose tokens
 * depend on the whole KV history it reads, real HTTP): choice indexes (completions batch:
 * prompt p's sample j is choice p * n + j), streaming with each chunk's index, usage with
 * each prompt counted once, seeds seed + i equal to n=1 requests, greedy samples equal.
 */
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { historySampler } from '../testing/FakeEngine.js';
import { qwenTokenizer } from '../testing/qwenTokenizer.js';
import { startTestServer, type TestServer } from '../testing/testServer.js';

const tok = await qwenTokenizer();
const words = tok.encode(' the cat sat on a mat and then it ran far away over hills', false);
const story = 'Tell me a story about a cat who lived in a big old house by the sea';
const poem = 'Write a poem about the moon and the stars over a quiet lake at night';
const messages = [{ role: 'user' as const, content: story }];

let srv: TestServer;
let client: OpenAI;
beforeAll(async () => {
  srv = await startTestServer({ engine: { maxModelLen: 256, kvBlockSize: 4, nextToken: historySampler(words) } });
  client = new OpenAI({ baseURL: `${srv.url}/v1`, apiKey: 'none', maxRetries: 0 });
});
afterAll(() => srv.close());

/** Streamed text and finish reason of every choice index, and the usage chunk's usage. */
async function drain(stream: AsyncIterable<{ choices: { index: number; text?: string; delta?: { content?: string | null }; finish_reason: string | null }[]; usage?: OpenAI.CompletionUsage | null }>) {
  const texts: string[] = [];
  const finishes: (string | null)[] = [];
  let usage: OpenAI.CompletionUsage | null | undefined;
  for await (const chunk of stream) {
    for (const c of chunk.choices) {
      texts[c.index] = (texts[c.index] ?? '') + (c.text ?? c.delta?.content ?? '');
      finishes[c.index] = c.finish_reason ?? finishes[c.index] ?? null;
    }
    if (chunk.usage) usage = chunk.usage;
  }
  return { texts, finishes, usage };
}

describe('n samples per prompt (openai client)', () => {
  it('chat: n=3 choices indexed 0..2, the prompt counted once; sample i equals n=1 with seed + i', async () => {
    const r = await client.chat.completions.create({ model: 'tiny', messages, n: 3, max_tokens: 6, temperature: 1, seed: 40 });
    expect(r.choices.map((c) => [c.index, c.finish_reason])).toEqual([
      [0, 'length'],
      [1, 'length'],
      [2, 'length'],
    ]);
    const one = await client.chat.completions.create({ model: 'tiny', messages, max_tokens: 6, temperature: 1, seed: 40 });
    const promptTokens = one.usage!.prompt_tokens;
    expect(r.usage).toEqual({ prompt_tokens: promptTokens, completion_tokens: 18, total_tokens: promptTokens + 18 });
    const texts = r.choices.map((c) => c.message.content);
    expect(new Set(texts).size).toBe(3); // different seeds, different texts
    for (const i of [0, 1, 2]) {
      const alone = i === 0 ? one : await client.chat.completions.create({ model: 'tiny', messages, max_tokens: 6, temperature: 1, seed: 40 + i });
      expect(alone.choices[0]!.message.content, `choice ${i}`).toBe(texts[i]);
    }
    const greedy = await client.chat.completions.create({ model: 'tiny', messages, n: 3, max_tokens: 6, temperature: 0 });
    expect(new Set(greedy.choices.map((c) => c.message.content)).size).toBe(1);
  });

  it('chat streaming: every chunk carries its index; one usage chunk with the prompt once', async () => {
    const plain = await client.chat.completions.create({ model: 'tiny', messages, n: 3, max_tokens: 5, temperature: 1, seed: 7 });
    const stream = await client.chat.completions.create({ model: 'tiny', messages, n: 3, max_tokens: 5, temperature: 1, seed: 7, stream: true, stream_options: { include_usage: true } });
    const { texts, finishes, usage } = await drain(stream);
    expect(texts).toEqual(plain.choices.map((c) => c.message.content));
    expect(finishes).toEqual(['length', 'length', 'length']);
    expect(usage).toEqual(plain.usage);
  });

  it('completions batch: prompt p sample j is choice p * n + j; usage counts each prompt once', async () => {
    const r = await client.completions.create({ model: 'tiny', prompt: [story, poem], n: 2, max_tokens: 4, temperature: 1, seed: 3 });
    expect(r.choices.map((c) => c.index)).toEqual([0, 1, 2, 3]);
    const singles = await Promise.all(
      [story, poem].flatMap((prompt) => [3, 4].map((seed) => client.completions.create({ model: 'tiny', prompt, max_tokens: 4, temperature: 1, seed }))),
    );
    expect(r.choices.map((c) => c.text)).toEqual(singles.map((s) => s.choices[0]!.text));
    const promptTokens = singles[0]!.usage!.prompt_tokens + singles[2]!.usage!.prompt_tokens;
    expect(r.usage).toEqual({ prompt_tokens: promptTokens, completion_tokens: 16, total_tokens: promptTokens + 16 });

    const stream = await client.completions.create({ model: 'tiny', prompt: [story, poem], n: 2, max_tokens: 4, temperature: 1, seed: 3, stream: true, stream_options: { include_usage: true } });
    const streamed = await drain(stream);
    expect(streamed.texts).toEqual(r.choices.map((c) => c.text));
    expect(streamed.usage).toEqual(r.usage);
  });

  it('shares the prompt blocks (prefix-sharing counters) and frees every block', async () => {
    const before = { ...srv.api.serving.scheduler.promptSharing };
    await client.completions.create({ model: 'tiny', prompt: story, n: 4, max_tokens: 3, temperature: 1, seed: 1 });
    const after = srv.api.serving.scheduler.promptSharing;
    const promptTokens = tok.encode(story).length;
    expect(after.numLookedUpTokens - before.numLookedUpTokens).toBe(4 * promptTokens);
    expect(after.numSharedTokens - before.numSharedTokens).toBe(3 * Math.floor((promptTokens - 1) / 4) * 4);
    expect(srv.api.serving.scheduler.blocks.owners()).toEqual([]);
  });

  it('n beyond max-num-seqs is a 400 naming n', async () => {
    const err = await client.completions.create({ model: 'tiny', prompt: 'x', n: 65 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.BadRequestError);
    expect((err as InstanceType<typeof OpenAI.BadRequestError>).message).toMatch(/n=65 is more than this server runs at once/);
    expect((err as InstanceType<typeof OpenAI.BadRequestError>).param).toBe('n');
  });
});
