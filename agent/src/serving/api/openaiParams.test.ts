/**
 * Sampling controls and log-probabilities through the official `openai` npm client against
 * the test server (FakeEngine: it prefers one token by 20 nats over its runner-up, see
 * testing/fakeLogits.ts), and every refused field's 400 over HTTP.
 */
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jsonOf } from '../testing/httpBodies.js';
import { qwenTokenizer } from '../testing/qwenTokenizer.js';
import { startTestServer, type TestServer } from '../testing/testServer.js';
import { fieldsOf, requestFields } from './requestFields.js';

const tok = await qwenTokenizer();
const HELLO = 9707; // "Hello"
const WORLD = 1879; // " world", the fake model's runner-up after Hello
const EOS = 151_645;

let srv: TestServer; // the fake model cycles through its tokens
let fixed: TestServer; // the fake model always prefers "Hello"
let eosLover: TestServer; // the fake model always prefers EOS
const clients: OpenAI[] = [];
const clientOf = (s: TestServer): OpenAI => new OpenAI({ baseURL: `${s.url}/v1`, apiKey: 'k', maxRetries: 0 });
beforeAll(async () => {
  [srv, fixed, eosLover] = await Promise.all([startTestServer(), startTestServer({ engine: { nextToken: () => HELLO } }), startTestServer({ engine: { nextToken: () => EOS } })]);
  clients.push(clientOf(srv), clientOf(fixed), clientOf(eosLover));
});
afterAll(() => Promise.all([srv, fixed, eosLover].map((s) => s.close())));

/** vLLM's extra fields are not in the client's types: pass the body through. */
const chat = (c: OpenAI, body: object): Promise<OpenAI.ChatCompletion> => c.chat.completions.create({ model: 'tiny', messages: [{ role: 'user', content: 'hi' }], ...body } as never) as never;
const complete = (c: OpenAI, body: object): Promise<OpenAI.Completion & { choices: { prompt_logprobs?: unknown; token_ids?: number[]; prompt_token_ids?: number[] }[] }> =>
  c.completions.create({ model: 'tiny', prompt: 'Once upon', ...body } as never) as never;

describe('sampling controls (openai client)', () => {
  it('a +100 logit_bias on a token makes every sampled token that token', async () => {
    const r = await chat(clients[0]!, { max_tokens: 5, logit_bias: { [WORLD]: 100 }, logprobs: true });
    expect(r.choices[0]!.message.content).toBe(' world'.repeat(5));
    expect(r.choices[0]!.logprobs!.content!.map((e) => e.token)).toEqual(new Array(5).fill(' world'));
  });

  it('a frequency penalty changes the reported logprobs by the rule (the gap to the runner-up shrinks by the penalty per occurrence)', async () => {
    const r = await chat(clients[1]!, { max_tokens: 5, temperature: 0, frequency_penalty: 1.5, logprobs: true, top_logprobs: 2 });
    const content = r.choices[0]!.logprobs!.content!;
    content.forEach((e, k) => {
      expect(e.token).toBe('Hello');
      expect(e.top_logprobs.map((t) => t.token)).toEqual(['Hello', ' world']);
      expect(e.top_logprobs[0]!.logprob - e.top_logprobs[1]!.logprob).toBeCloseTo(20 - 1.5 * k, 3);
    });
    const plain = await chat(clients[1]!, { max_tokens: 2, temperature: 0, logprobs: true, top_logprobs: 2 });
    const gaps = plain.choices[0]!.logprobs!.content!.map((e) => e.top_logprobs[0]!.logprob - e.top_logprobs[1]!.logprob);
    gaps.forEach((g) => expect(g).toBeCloseTo(20, 3));
  });

  it('min_tokens: a model that prefers EOS generates min_tokens tokens first, then stops', async () => {
    const r = await complete(clients[2]!, { max_tokens: 20, min_tokens: 4 });
    expect(r.choices[0]!.finish_reason).toBe('stop');
    expect(r.usage!.completion_tokens).toBe(5);
    const none = await complete(clients[2]!, { max_tokens: 20 });
    expect(none.usage!.completion_tokens).toBe(1);
  });

  it('skip_special_tokens false shows special tokens in the text (EOS past ignore_eos here)', async () => {
    const shown = await complete(clients[2]!, { max_tokens: 2, ignore_eos: true, skip_special_tokens: false });
    expect(shown.choices[0]!.text).toBe('<|im_end|><|im_end|>');
    const skipped = await complete(clients[2]!, { max_tokens: 2, ignore_eos: true });
    expect(skipped.choices[0]!.text).toBe('');
  });

  it('stop strings: cut before them, or kept with include_stop_str_in_output', async () => {
    const base = { prompt: 'x', max_tokens: 30, temperature: 0, seed: 2 };
    const cut = await complete(clients[0]!, { ...base, stop: [' world'] });
    const kept = await complete(clients[0]!, { ...base, stop: [' world'], include_stop_str_in_output: true });
    expect(cut.choices[0]!.finish_reason).toBe('stop');
    expect(kept.choices[0]!.text).toBe(`${cut.choices[0]!.text} world`);
  });
});

describe('log-probabilities (openai client)', () => {
  it('chat top_logprobs k returns k entries, most likely first; streaming gives the same entries chunk by chunk', async () => {
    const body = { max_tokens: 4, temperature: 0, seed: 1, logprobs: true, top_logprobs: 5 };
    const r = await chat(clients[0]!, body);
    const content = r.choices[0]!.logprobs!.content!;
    expect(content).toHaveLength(4);
    for (const e of content) {
      expect(e.top_logprobs).toHaveLength(5);
      const lps = e.top_logprobs.map((t) => t.logprob);
      expect([...lps].sort((a, b) => b - a)).toEqual(lps);
      expect(e.top_logprobs[0]).toEqual({ token: e.token, logprob: e.logprob, bytes: [...Buffer.from(e.token)] });
    }
    const stream = await clients[0]!.chat.completions.create({ model: 'tiny', messages: [{ role: 'user', content: 'hi' }], ...body, stream: true });
    const streamed: unknown[] = [];
    for await (const chunk of stream) streamed.push(...(chunk.choices[0]?.logprobs?.content ?? []));
    expect(streamed).toEqual(content);
  });

  it('completions logprobs 0: the chosen token only, with tokens, token_logprobs and text_offset', async () => {
    const r = await complete(clients[0]!, { max_tokens: 4, temperature: 0, logprobs: 0 });
    const lp = r.choices[0]!.logprobs!;
    expect(lp.tokens).toHaveLength(4);
    expect(lp.top_logprobs!.map((t) => Object.keys(t))).toEqual(lp.tokens!.map((t) => [t]));
    expect(lp.tokens!.join('')).toBe(r.choices[0]!.text);
    expect(lp.text_offset).toEqual(lp.tokens!.map((_, j) => lp.tokens!.slice(0, j).join('').length));
    expect(lp.token_logprobs!.every((x) => typeof x === 'number' && x <= 0)).toBe(true);
  });

  it('echo prepends the prompt; with logprobs its tokens come first, the first one null', async () => {
    const prompt = 'Once upon';
    const promptIds = tok.encode(prompt);
    const r = await complete(clients[0]!, { prompt, max_tokens: 3, temperature: 0, seed: 4, echo: true, logprobs: 1 });
    const c = r.choices[0]!;
    expect(c.text.startsWith(prompt)).toBe(true);
    expect(c.logprobs!.tokens).toHaveLength(promptIds.length + 3);
    expect(c.logprobs!.tokens!.slice(0, promptIds.length).join('')).toBe(prompt);
    expect(c.logprobs!.token_logprobs![0]).toBeNull();
    expect(c.logprobs!.top_logprobs![0]).toBeNull();
    expect(typeof c.logprobs!.token_logprobs![1]).toBe('number');
    const only = await complete(clients[0]!, { prompt, max_tokens: 0, echo: true, logprobs: 0 });
    expect(only.choices[0]!.text).toBe(prompt);
    expect(only.choices[0]!.logprobs!.tokens).toHaveLength(promptIds.length);
    // Streamed: the first chunk carries the prompt.
    const stream = await clients[0]!.completions.create({ model: 'tiny', prompt, max_tokens: 3, temperature: 0, seed: 4, echo: true, logprobs: 1, stream: true });
    let text = '';
    const tokens: string[] = [];
    for await (const chunk of stream) {
      text += chunk.choices[0]?.text ?? '';
      tokens.push(...(chunk.choices[0]?.logprobs?.tokens ?? []));
    }
    expect(text).toBe(c.text);
    expect(tokens).toEqual(c.logprobs!.tokens);
  });

  it("prompt_logprobs: vLLM's per-position dicts, the first null", async () => {
    const prompt = 'Once upon a time';
    const ids = tok.encode(prompt);
    const r = await complete(clients[0]!, { prompt, max_tokens: 1, prompt_logprobs: 2 });
    const pl = r.choices[0]!.prompt_logprobs as (Record<string, { logprob: number; rank: number; decoded_token: string }> | null)[];
    expect(pl).toHaveLength(ids.length);
    expect(pl[0]).toBeNull();
    pl.slice(1).forEach((dict, j) => {
      expect(dict![String(ids[j + 1])]).toMatchObject({ decoded_token: tok.tokenString(ids[j + 1]!), rank: expect.any(Number) });
      expect(Object.values(dict!).filter((e) => e.rank <= 2).length).toBeGreaterThanOrEqual(2);
    });
    const c = await chat(clients[0]!, { max_tokens: 1, prompt_logprobs: 0 });
    expect((c as unknown as { prompt_logprobs: unknown[] }).prompt_logprobs[0]).toBeNull();
  });

  it('return_tokens_as_token_ids and return_token_ids', async () => {
    const r = await complete(clients[0]!, { max_tokens: 2, logprobs: 0, return_tokens_as_token_ids: true, return_token_ids: true });
    const c = r.choices[0]!;
    expect(c.logprobs!.tokens).toEqual(c.token_ids!.map((id) => `token_id:${id}`));
    expect(c.prompt_token_ids).toEqual(tok.encode('Once upon'));
    const ch = (await chat(clients[0]!, { max_tokens: 2, logprobs: true, return_tokens_as_token_ids: true, return_token_ids: true })) as OpenAI.ChatCompletion & { prompt_token_ids: number[]; choices: { token_ids: number[] }[] };
    expect(ch.choices[0]!.logprobs!.content!.map((e) => e.token)).toEqual(ch.choices[0]!.token_ids.map((id) => `token_id:${id}`));
    expect(ch.prompt_token_ids.length).toBe(ch.usage!.prompt_tokens);
  });
});

describe('refused fields over HTTP', () => {
  const post = (path: string, body: object): Promise<Response> => fetch(srv.url + path, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

  it.each([
    ['/v1/chat/completions', 'chat', { model: 'tiny', messages: [{ role: 'user', content: 'hi' }] }],
    ['/v1/completions', 'completions', { model: 'tiny', prompt: 'hi' }],
  ] as const)('%s: every refused field gets a 400 naming it', async (path, endpoint, base) => {
    for (const name of fieldsOf(endpoint).filter((f) => requestFields[f]!.status.kind === 'refused')) {
      const res = await post(path, { ...base, [name]: 'probe' });
      expect(res.status, name).toBe(400);
      expect((await jsonOf(res)).error).toMatchObject({ param: name, code: 'unsupported_parameter', type: 'invalid_request_error' });
    }
    const unknown = await post(path, { ...base, frobnicate: 1 });
    expect(unknown.status).toBe(400);
    expect((await jsonOf(unknown)).error).toMatchObject({ param: 'frobnicate', code: 'unknown_parameter' });
  });

  it('stream_options without stream, tools through chat_template_kwargs, an over-long completions prompt', async () => {
    const cases: [string, object, string][] = [
      ['/v1/chat/completions', { model: 'tiny', messages: [{ role: 'user', content: 'hi' }], stream_options: { include_usage: true } }, 'stream_options'],
      ['/v1/chat/completions', { model: 'tiny', messages: [{ role: 'user', content: 'hi' }], chat_template_kwargs: { tools: [{ type: 'function' }] } }, 'chat_template_kwargs.tools'],
      ['/v1/completions', { model: 'tiny', prompt: new Array(5000).fill(5) }, 'prompt'],
      ['/v1/completions', { model: 'tiny', prompt: 'hi', logit_bias: { '999999999': 5 } }, 'logit_bias'],
    ];
    for (const [path, body, param] of cases) {
      const res = await post(path, body);
      expect(res.status, param).toBe(400);
      expect((await jsonOf(res)).error.param).toBe(param);
    }
  });

  it('the openai client raises BadRequestError for the legacy functions and best_of', async () => {
    await expect(clients[0]!.chat.completions.create({ model: 'tiny', messages: [{ role: 'user', content: 'x' }], functions: [{ name: 'f' }] })).rejects.toBeInstanceOf(OpenAI.BadRequestError);
    await expect(clients[0]!.completions.create({ model: 'tiny', prompt: 'x', best_of: 2 })).rejects.toThrow(/OpenAI removed best_of/);
  });
});
