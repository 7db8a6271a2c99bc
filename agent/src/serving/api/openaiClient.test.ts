/** The official `openai` npm client against the server (fake engine, real HTTP). */
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../testing/testServer.js';

let srv: TestServer;
let client: OpenAI;
beforeAll(async () => {
  srv = await startTestServer({ apiKey: 'k-123', engine: { maxModelLen: 256 } });
  client = new OpenAI({ baseURL: `${srv.url}/v1`, apiKey: 'k-123', maxRetries: 0 });
});
afterAll(() => srv.close());

describe('openai client', () => {
  it('lists models', async () => {
    const page = await client.models.list();
    expect(page.data.map((m) => m.id)).toEqual(['tiny']);
  });

  it('chat completions, non-streaming', async () => {
    const r = await client.chat.completions.create({ model: 'tiny', messages: [{ role: 'user', content: 'Hello' }], max_tokens: 6, temperature: 0 });
    expect(r.choices[0]!.message.role).toBe('assistant');
    expect(r.choices[0]!.message.content!.length).toBeGreaterThan(0);
    expect(r.choices[0]!.finish_reason).toBe('length');
    expect(r.usage!.completion_tokens).toBe(6);
  });

  it('chat completions, streaming with usage', async () => {
    const stream = await client.chat.completions.create({ model: 'tiny', messages: [{ role: 'user', content: 'Hello' }], max_tokens: 5, stream: true, stream_options: { include_usage: true } });
    let text = '';
    let finish: string | null = null;
    let usage: OpenAI.CompletionUsage | null | undefined;
    for await (const chunk of stream) {
      if (chunk.choices[0]) {
        text += chunk.choices[0].delta.content ?? '';
        finish = chunk.choices[0].finish_reason ?? finish;
      }
      if (chunk.usage) usage = chunk.usage;
    }
    expect(text.length).toBeGreaterThan(0);
    expect(finish).toBe('length');
    expect(usage?.completion_tokens).toBe(5);
  });

  it('completions, non-streaming and streaming', async () => {
    const r = await client.completions.create({ model: 'tiny', prompt: 'Once upon', max_tokens: 4, seed: 3 });
    expect(r.choices[0]!.finish_reason).toBe('length');
    const stream = await client.completions.create({ model: 'tiny', prompt: 'Once upon', max_tokens: 4, seed: 3, stream: true });
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.text ?? '';
    expect(text).toBe(r.choices[0]!.text);
  });

  it('maps errors to the client exception classes', async () => {
    await expect(client.completions.create({ model: 'nope', prompt: 'x' })).rejects.toBeInstanceOf(OpenAI.NotFoundError);
    await expect(client.completions.create({ model: 'tiny', prompt: 'x', n: 65 })).rejects.toBeInstanceOf(OpenAI.BadRequestError);
    const bad = new OpenAI({ baseURL: `${srv.url}/v1`, apiKey: 'wrong', maxRetries: 0 });
    await expect(bad.models.list()).rejects.toBeInstanceOf(OpenAI.AuthenticationError);
  });
});
