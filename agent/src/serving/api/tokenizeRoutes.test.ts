/**
 * POST /tokenize and /detokenize over real loopback HTTP (fake engine, the real Qwen3
 * tokenizer): vLLM's request and response shapes, its defaults, and every refusal with the
 * field it names.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jsonOf } from '../testing/httpBodies.js';
import { qwenTokenizer } from '../testing/qwenTokenizer.js';
import { startTestServer, type TestServer } from '../testing/testServer.js';
import type { TextTokenizer } from '../tokenizer/TextTokenizer.js';

let srv: TestServer;
let tok: TextTokenizer;
beforeAll(async () => {
  srv = await startTestServer({ engine: { maxModelLen: 128 } });
  tok = await qwenTokenizer();
});
afterAll(() => srv.close());

async function post(path: string, body: unknown): Promise<{ status: number; body: ReturnType<typeof JSON.parse> }> {
  const res = await fetch(srv.url + path, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  return { status: res.status, body: await jsonOf(res) };
}

const hi = [{ role: 'user', content: 'Hello there' }];

describe('POST /tokenize', () => {
  it('a prompt: {count, max_model_len, tokens, token_strs: null}, the same ids as a completion gets', async () => {
    const r = await post('/tokenize', { model: 'tiny', prompt: 'Hello world' });
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ count: 2, max_model_len: 128, tokens: tok.encode('Hello world'), token_strs: null });
    expect(Object.keys(r.body)).toEqual(['count', 'max_model_len', 'tokens', 'token_strs']);
  });

  it('model is optional; return_token_strs gives the vocabulary strings', async () => {
    const r = await post('/tokenize', { prompt: 'Hello world', return_token_strs: true });
    expect(r.body.token_strs).toEqual(['Hello', 'Ġworld']);
  });

  it('messages: the chat template with the generation prompt by default, and without it when asked', async () => {
    const withPrompt = (await post('/tokenize', { model: 'tiny', messages: hi })).body;
    expect(withPrompt.tokens).toEqual(tok.encodeChat([{ role: 'user', content: 'Hello there' }], { addGenerationPrompt: true }));
    const text = tok.decode(withPrompt.tokens, false);
    expect(text).toMatch(/<\|im_start\|>user\nHello there<\|im_end\|>\n<\|im_start\|>assistant\n$/);
    const without = (await post('/tokenize', { model: 'tiny', messages: hi, add_generation_prompt: false })).body;
    expect(tok.decode(without.tokens, false)).toMatch(/Hello there<\|im_end\|>\n$/);
    expect(without.count).toBeLessThan(withPrompt.count);
  });

  it('continue_final_message ends at the last message\'s text (no end of turn); with add_generation_prompt it is a 400', async () => {
    const messages = [...hi, { role: 'assistant', content: 'Once upon a' }];
    const r = await post('/tokenize', { messages, add_generation_prompt: false, continue_final_message: true });
    expect(r.status).toBe(200);
    expect(tok.decode(r.body.tokens, false)).toMatch(/<\|im_start\|>assistant\n(<think>\n\n<\/think>\n\n)?Once upon a$/);
    const both = await post('/tokenize', { messages, continue_final_message: true });
    expect(both.status).toBe(400);
    expect(both.body.error).toMatchObject({ param: 'continue_final_message', type: 'invalid_request_error' });
    expect(both.body.error.message).toMatch(/Cannot set both `continue_final_message` and `add_generation_prompt` to True/);
  });

  it('tools reach the template as chat completions pass them (vLLM\'s test_tokenize_chat_with_tools)', async () => {
    const tools = [{ type: 'function', function: { name: 'get_weather', parameters: { type: 'object', properties: { location: { type: 'string' } } } } }];
    const messages = [{ role: 'user', content: "What's the weather like in Paris today?" }];
    for (const add_generation_prompt of [false, true]) {
      const r = await post('/tokenize', { model: 'tiny', messages, tools, add_generation_prompt });
      expect(r.body.tokens).toEqual(tok.encodeChat(messages, { addGenerationPrompt: add_generation_prompt, extra: { tools } }));
      expect(tok.decode(r.body.tokens, false)).toContain('<tools>\n{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {"location": {"type": "string"}}}}}\n</tools>');
    }
    const bad = await post('/tokenize', { messages, tools: [{ type: 'function', function: { name: 'f', parameters: { type: 'array' } } }] });
    expect(bad.body.error).toMatchObject({ param: 'tools.0.function.parameters' });
    expect((await post('/tokenize', { messages, chat_template_kwargs: { tools } })).body.error).toMatchObject({ param: 'chat_template_kwargs.tools' });
  });

  it('chat_template_kwargs reach the template (Qwen3\'s enable_thinking)', async () => {
    const off = (await post('/tokenize', { messages: hi, chat_template_kwargs: { enable_thinking: false } })).body;
    expect(tok.decode(off.tokens, false)).toMatch(/<think>\n\n<\/think>\n\n$/);
  });

  it('refuses an unknown model (404 like the chat route), both prompt and messages, no prompt, a request template', async () => {
    const unknown = await post('/tokenize', { model: 'other', prompt: 'x' });
    expect(unknown.status).toBe(404);
    expect(unknown.body.error).toMatchObject({ code: 'model_not_found', param: 'model' });
    const both = await post('/tokenize', { prompt: 'x', messages: hi });
    expect([both.status, both.body.error.param]).toEqual([400, 'prompt']);
    const none = await post('/tokenize', { model: 'tiny' });
    expect([none.status, none.body.error.param]).toEqual([400, 'prompt']);
    const template = await post('/tokenize', { messages: hi, chat_template: '{{ messages }}' });
    expect([template.status, template.body.error.param]).toEqual([400, 'chat_template']);
  });
});

describe('POST /detokenize', () => {
  it('gives the text back, special tokens kept (as vLLM)', async () => {
    const tokens = tok.encodeChat([{ role: 'user', content: 'Hello there' }], { addGenerationPrompt: false });
    const r = await post('/detokenize', { model: 'tiny', tokens });
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ prompt: tok.decode(tokens, false) });
    expect(r.body.prompt).toContain('<|im_start|>user');
    expect((await post('/detokenize', { tokens: [] })).body).toEqual({ prompt: '' });
  });

  it('ids outside the vocabulary are a 400 naming `tokens` and the index', async () => {
    // Past the tokenizer, negative, and a padding row of the model's embedding the tokenizer has no token for.
    for (const id of [151_936, -1, 151_700]) {
      const r = await post('/detokenize', { tokens: [9707, id] });
      expect(r.status).toBe(400);
      expect(r.body.error).toMatchObject({ param: 'tokens', code: 'invalid_token_id' });
      expect(r.body.error.message).toBe(`tokens[1]: token id ${id} is outside the vocabulary: the tokenizer has no token with this id`);
    }
    const notInt = await post('/detokenize', { tokens: [1.5] });
    expect([notInt.status, notInt.body.error.param]).toEqual([400, 'tokens.0']);
    expect((await post('/detokenize', { model: 'other', tokens: [1] })).status).toBe(404);
  });
});
