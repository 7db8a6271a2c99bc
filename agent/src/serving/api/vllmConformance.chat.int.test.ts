/**
 * vLLM's OpenAI-server tests for /v1/chat/completions, their assertions that do not depend
 * on the model's text, ported to the official openai client against one real colocated rank
 * (CPU, tiny random-weight checkpoint with the Qwen3 chat template). vLLM's tokenizer is
 * replaced by the rank's /tokenize and /detokenize; a request that leaves max_tokens to the
 * window upstream gets a small one here. Each case names the upstream test it ports
 * (vllm-project/vllm, tests/entrypoints/openai/):
 *
 *   chat_completion/test_chat.py: test_no_logprobs_chat, test_zero_logprobs_chat, test_some_logprobs_chat,
 *     test_too_many_chat_logprobs, test_prompt_logprobs_chat, test_more_than_one_prompt_logprobs_chat,
 *     test_single_chat_session, test_chat_streaming, test_chat_completion_stream_options,
 *     test_structured_outputs_type_error, test_response_format_text, test_extra_fields_allowed,
 *     test_complex_message_content, test_long_seed, test_chat_completion_n_parameter_non_streaming,
 *     test_chat_completion_n_parameter_streaming, test_chat_completion_n_with_seed, test_chat_completion_n_equals_1
 *   chat_completion/test_chat_completion.py: test_chat_completion_truncation_side_controls_prompt_truncation,
 *     test_invalid_json_schema, test_invalid_regex, test_invalid_grammar, test_empty_grammar
 *   chat_completion/test_chat_logit_bias_validation.py: all five tests
 *   chat_completion/test_chat_stop_token_ids_validation.py: all three tests
 *   chat_completion/test_non_object_body_validation.py: both tests (over HTTP: status 400, not 500)
 *   basic/test_return_token_ids.py: test_chat_completion_with_emoji_and_token_ids
 *   chat_completion/test_chat_echo.py: test_chat_session_with_echo_and_continue_final_message
 *
 * Adapted: test_more_than_one_prompt_logprobs_chat expects exactly k entries at a position
 * (the prompt token is among a trained model's top k there): here k or k + 1. test_long_seed's
 * message names pydantic's bounds, ours zod's. test_single_chat_session: usage carries
 * prompt_tokens_details.cached_tokens when the prefix cache served part of the prompt (vLLM
 * reports it only with --enable-prompt-tokens-details; docs/api.md, "Usage"). test_complex_message_content compares text parts
 * with the same string content (upstream: the answer "2"). test_extra_fields_allowed: an unknown
 * message field is a 400 naming it (vLLM passes it to the chat template; docs/api.md `messages`).
 * test_chat_session_with_echo_and_continue_final_message: a random-weight model rarely stops,
 * so max_tokens is small and finish_reason is not checked; the prompt is checked instead.
 *
 * Left out, and why:
 * - The chunk with finish_reason has no content (test_chat_streaming's `assert delta.content`),
 *   so completion_tokens is not strictly larger in every continuous-usage chunk: a choice ends
 *   with its own finish chunk, as OpenAI streams (docs/api.md, "Streams").
 * - min_characters (test_chat_completion_stream_options): a field newer than the request table,
 *   refused as unknown (docs/api.md, "Unknown fields").
 * - test_custom_role: roles other than system, developer, user, assistant and tool are refused
 *   (docs/api.md, `messages`). Structured outputs, response_format json_object / json_schema
 *   (test_structured_outputs_*_chat, test_response_format_json_*): their assertions read what a
 *   trained model answers; agent/src/afd/structuredOutputs.int.test.ts checks every constrained
 *   output of a random-weight and the demo model with ajv instead. The tool tests need a model
 *   trained to call tools; chatTools.test.ts (scripted engine) and agent/src/afd/agentClients.int.test.ts
 *   (scripted checkpoint, the openai and ai clients) cover tool calling. prompt_logprobs / top_logprobs -1 need vLLM's --max-logprobs. test_invocations: no /invocations route.
 */
import OpenAI from 'openai';
import { describe, expect, it } from 'vitest';
import { testAddonBuilt } from '../../testing/agentBundle.js';
import { MODEL as model, useConformanceRank } from '../../testing/conformanceRank.js';
import type { VllmChatCompletion, VllmFields } from '../../testing/vllmFields.js';

type Body = OpenAI.ChatCompletionCreateParamsNonStreaming & VllmFields;
type Chunk = OpenAI.ChatCompletionChunk & { prompt_token_ids?: number[]; choices: { token_ids?: number[] }[] };
const r = useConformanceRank('afd-vllm-chat-');
const create = async (body: Partial<Body>): Promise<VllmChatCompletion> => (await r.client.chat.completions.create({ model, messages, ...body } as Body)) as VllmChatCompletion;
const stream = (body: Partial<Body>): Promise<AsyncIterable<Chunk>> => r.client.chat.completions.create({ model, messages, ...body, stream: true } as OpenAI.ChatCompletionCreateParamsStreaming) as Promise<AsyncIterable<Chunk>>;
const messages: OpenAI.ChatCompletionMessageParam[] = [
  { role: 'system', content: 'you are a helpful assistant' },
  { role: 'user', content: 'what is 1+1?' },
];
const history: OpenAI.ChatCompletionMessageParam[] = [
  { role: 'system', content: 'You are a helpful assistant.' },
  { role: 'user', content: 'Who won the world series in 2020?' },
  { role: 'assistant', content: 'The Los Angeles Dodgers won the World Series in 2020.' },
  { role: 'user', content: 'Where was it played?' },
];
const refused = (p: Promise<unknown>): Promise<void> => expect(p).rejects.toBeInstanceOf(OpenAI.BadRequestError);

describe.skipIf(!testAddonBuilt())("vLLM's chat tests (real rank, openai client)", () => {
  it('test_no_logprobs_chat, test_zero_logprobs_chat, test_some_logprobs_chat', async () => {
    expect((await create({ max_completion_tokens: 5, temperature: 0, logprobs: false })).choices[0]!.logprobs).toBeNull();
    const zero = await create({ max_completion_tokens: 5, temperature: 0, logprobs: true, top_logprobs: 0 });
    expect(zero.choices[0]!.logprobs!.content![0]!.top_logprobs).toHaveLength(0);
    const five = await create({ max_completion_tokens: 5, temperature: 0, logprobs: true, top_logprobs: 5 });
    expect(five.choices[0]!.logprobs!.content![0]!.top_logprobs).toHaveLength(5);
  });

  it('test_too_many_chat_logprobs', async () => {
    await expect(stream({ max_completion_tokens: 10, logprobs: true, top_logprobs: 21 })).rejects.toBeInstanceOf(OpenAI.APIError);
    await refused(create({ max_completion_tokens: 10, logprobs: true, top_logprobs: 30 }));
    expect((await create({ max_completion_tokens: 10 })).choices[0]!.message.content).toBeTypeOf('string');
  });

  it('test_prompt_logprobs_chat (1, 0, -1, None), test_more_than_one_prompt_logprobs_chat', async () => {
    await refused(create({ messages: history, max_completion_tokens: 5, prompt_logprobs: -1 }));
    for (const k of [1, 2, 0]) {
      const c = await create({ messages: history, max_completion_tokens: 5, prompt_logprobs: k });
      expect(c.prompt_logprobs!.length).toBeGreaterThan(0);
      const entries = Object.keys(c.prompt_logprobs![3]!).length;
      expect([k, k + 1], `prompt_logprobs ${k}: ${entries} entries`).toContain(entries);
    }
    expect((await create({ messages: history, max_completion_tokens: 5 })).prompt_logprobs ?? null).toBeNull();
  });

  it('test_single_chat_session', async () => {
    const c = await create({ max_completion_tokens: 5, logprobs: true, top_logprobs: 5 });
    expect(c.id).toBeTruthy();
    expect(c.choices).toHaveLength(1);
    expect(c.choices[0]!.finish_reason).toBe('length');
    const promptTokens = (await r.tokenize({ messages })).count;
    // Earlier tests sent these messages: the prefix cache serves whole 16-token blocks of the prompt, never its last token.
    const cached = c.usage!.prompt_tokens_details?.cached_tokens ?? 0;
    expect(cached % 16).toBe(0);
    expect(cached).toBeLessThan(promptTokens);
    expect(c.usage).toEqual({ completion_tokens: 5, prompt_tokens: promptTokens, total_tokens: promptTokens + 5, ...(cached > 0 ? { prompt_tokens_details: { cached_tokens: cached } } : {}) });
    const message = c.choices[0]!.message;
    expect(message.role).toBe('assistant');
    const next = await create({ messages: [...messages, { role: 'assistant', content: message.content ?? '' }, { role: 'user', content: 'express your result in json' }], max_completion_tokens: 5 });
    expect(next.choices[0]!.message.content).toBeTypeOf('string');
  });

  it('test_chat_streaming', async () => {
    const plain = await create({ max_completion_tokens: 10, temperature: 0 });
    let text = '';
    let finishes = 0;
    let last: Chunk['choices'][number] | undefined;
    for await (const chunk of await stream({ max_completion_tokens: 10, temperature: 0 })) {
      last = chunk.choices[0]!;
      if (last.delta.role) expect(last.delta.role).toBe('assistant');
      text += last.delta.content ?? '';
      if (last.finish_reason !== null) finishes++;
    }
    expect(finishes).toBe(1);
    expect(last!.finish_reason).toBe(plain.choices[0]!.finish_reason);
    expect(text).toBe(plain.choices[0]!.message.content);
  });

  it('test_chat_completion_stream_options (without min_characters)', async () => {
    const base = { messages: [{ role: 'user' as const, content: 'What is the capital of France?' }], max_completion_tokens: 10, temperature: 0 };
    for await (const chunk of await stream({ ...base, stream_options: { include_usage: false } })) expect(chunk.usage ?? null).toBeNull();
    const chunks: Chunk[] = [];
    for await (const chunk of await stream({ ...base, stream_options: { include_usage: true, continuous_usage_stats: false } as OpenAI.ChatCompletionStreamOptions })) chunks.push(chunk);
    const end = chunks.findIndex((c) => c.choices[0]?.finish_reason);
    for (const c of chunks.slice(0, end + 1)) expect(c.usage ?? null).toBeNull();
    const final = chunks[end + 1]!;
    expect(final.usage!.total_tokens).toBe(final.usage!.prompt_tokens + final.usage!.completion_tokens);
    expect(final.usage!.prompt_tokens).toBeGreaterThan(0);
    expect(final.usage!.completion_tokens).toBeGreaterThan(0);
    expect(final.choices).toEqual([]);
    for (const stream_options of [{ include_usage: null }, { include_usage: true }]) await refused(create({ ...base, stream: false, stream_options } as Partial<Body>));
    let lastTokens = 0;
    const opts = { include_usage: true, continuous_usage_stats: true } as OpenAI.ChatCompletionStreamOptions;
    for await (const chunk of await stream({ ...base, min_tokens: 10, stream_options: opts })) {
      const u = chunk.usage!;
      expect(u.prompt_tokens).toBeGreaterThanOrEqual(0);
      expect(u.completion_tokens).toBeGreaterThanOrEqual(lastTokens); // upstream: larger, but equal on the usage-only chunk
      expect(u.total_tokens).toBe(u.prompt_tokens + u.completion_tokens);
      lastTokens = u.completion_tokens;
    }
    expect(lastTokens).toBe(10);
  });

  it('test_structured_outputs_type_error, test_invalid_json_schema, test_invalid_regex, test_invalid_grammar, test_empty_grammar', async () => {
    for (const structured_outputs of [{ regex: { 1: 'Python', 2: 'C++' } }, { json: { properties: { foo: 'bar' } } }, { regex: '[.*' }, { grammar: 'root ::= select_statementinvalidsyntax' }, { grammar: '' }]) {
      await refused(create({ structured_outputs }));
    }
  });

  it('test_response_format_text, test_extra_fields_allowed, test_complex_message_content', async () => {
    const question = 'what is 1+1? please provide the result without any other text.';
    expect((await create({ messages: [{ role: 'user', content: 'what is 1+1?' }], max_completion_tokens: 10, response_format: { type: 'text' } })).choices[0]!.message.content).toBeTypeOf('string');
    // Adapted: vLLM hands extra message fields to the chat template; here they are refused by name.
    const extra = { role: 'user', content: 'what is 1+1?', extra_field: '0' } as OpenAI.ChatCompletionMessageParam;
    await expect(create({ messages: [extra], max_completion_tokens: 5, temperature: 0, seed: 0 })).rejects.toMatchObject({ status: 400, param: 'messages.0.extra_field' });
    const parts = await create({ messages: [{ role: 'user', content: [{ type: 'text', text: question }] }], max_completion_tokens: 5, temperature: 0, seed: 0 });
    const plain = await create({ messages: [{ role: 'user', content: question }], max_completion_tokens: 5, temperature: 0, seed: 0 });
    expect(parts.choices[0]!.message.content).toBe(plain.choices[0]!.message.content);
  });

  it('test_long_seed', async () => {
    for (const seed of ['-9223372036854775809', '9223372036854775808']) {
      const body = `{"model":"${model}","messages":[{"role":"system","content":"You are a helpful assistant."}],"temperature":0,"seed":${seed}}`;
      const res = await fetch(`${r.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
      expect(res.status).toBe(400);
      expect(((await res.json()) as { error: { param: string } }).error.param).toBe('seed');
    }
  });

  it('test_chat_completion_n_parameter_non_streaming, _streaming, _n_with_seed, _n_equals_1', async () => {
    const three = await create({ messages: [{ role: 'user', content: 'What is the opposite of big?' }], max_completion_tokens: 20, temperature: 0.7, n: 3 });
    expect(three.choices.map((c) => c.index)).toEqual([0, 1, 2]);
    for (const c of three.choices) expect(c.message.content!.length).toBeGreaterThan(0);
    expect(new Set(three.choices.map((c) => c.message.content)).size).toBeGreaterThan(1);
    const byIndex: string[] = ['', ''];
    for await (const chunk of await stream({ max_completion_tokens: 15, temperature: 0.7, n: 2 })) for (const c of chunk.choices) byIndex[c.index] += c.delta.content ?? '';
    for (const text of byIndex) expect(text.length).toBeGreaterThan(0);
    const seeded = await create({ messages: [{ role: 'user', content: 'Say hello.' }], max_completion_tokens: 10, temperature: 0.8, n: 2, seed: 42 });
    expect(seeded.choices.map((c) => [c.index, c.message.content!.length > 0])).toEqual([[0, true], [1, true]]);
    const one = await create({ messages: [{ role: 'user', content: 'Hello!' }], max_completion_tokens: 10, temperature: 0.7, n: 1 });
    expect(one.choices.map((c) => c.index)).toEqual([0]);
  });

  it('test_chat_completion_truncation_side_controls_prompt_truncation', async () => {
    const m: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: 'Summarize how prompt truncation works in one sentence.' }];
    const ids = async (o: VllmFields): Promise<number[]> => (await create({ messages: m, max_tokens: 1, temperature: 0, return_token_ids: true, ...o })).prompt_token_ids!;
    const full = await ids({});
    expect(full.length).toBeGreaterThan(4);
    expect(await ids({ truncate_prompt_tokens: 4, truncation_side: 'right' })).toEqual(full.slice(0, 4));
    expect(await ids({ truncate_prompt_tokens: 4, truncation_side: 'left' })).toEqual(full.slice(-4));
  });

  it('test_chat_logit_bias_valid / _invalid / _non_integer_key / _non_numeric_value / _multiple_non_integer_keys', async () => {
    const vocab = r.vocabSize();
    const m: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: 'Testing logit bias' }];
    expect((await create({ messages: m, max_tokens: 5, logit_bias: { [vocab - 1]: 1 } })).choices[0]!.message.content).toBeTypeOf('string');
    const failure = async (logit_bias: unknown): Promise<InstanceType<typeof OpenAI.APIError>> => {
      const err = await create({ messages: m, max_tokens: 5, logit_bias: logit_bias as Record<string, number> }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(OpenAI.BadRequestError);
      return err as InstanceType<typeof OpenAI.APIError>;
    };
    expect((await failure({ [vocab + 1]: 1 })).message).toMatch(new RegExp(`${vocab + 1}.*${vocab}`));
    expect((await failure({ not_a_token_id: 50 })).message).toMatch(/logit_bias.*not_a_token_id/);
    expect((await failure({ 1: 'not_a_number' })).message).toContain('logit_bias');
    expect((await failure({ bad1: 50, bad2: 20 })).message).toMatch(/bad1.*bad2/);
  });

  it('test_chat_stop_token_ids_valid / _out_of_vocab / _negative', async () => {
    const vocab = r.vocabSize();
    expect((await create({ max_tokens: 5, stop_token_ids: [vocab - 1] })).choices[0]!.message.content).toBeTypeOf('string');
    await expect(create({ max_tokens: 5, stop_token_ids: [vocab + 1] })).rejects.toThrow(new RegExp(`${vocab + 1}.*${vocab}`));
    await refused(create({ max_tokens: 5, stop_token_ids: [-1] }));
  });

  it('test_chat_completion_request_rejects_non_object_body, test_chat_completion_request_cache_salt_still_validated_on_dict', async () => {
    for (const body of ['this is not valid json{{{', '["not","an","object"]', '42', 'null']) {
      const res = await fetch(`${r.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
      expect(res.status, body).toBe(400);
    }
    await expect(create({ messages: [{ role: 'user', content: 'hello' }], cache_salt: '' })).rejects.toThrow(/cache_salt/);
  });

  it('test_chat_completion_with_emoji_and_token_ids', async () => {
    const m: OpenAI.ChatCompletionMessageParam[] = [
      { role: 'system', content: 'You like to use emojis in your responses.' },
      { role: 'user', content: 'Repeat after me: I love cats 🐱' },
    ];
    const c = await create({ messages: m, max_tokens: 50, temperature: 0, logprobs: true, return_token_ids: true });
    expect(c.choices[0]!.token_ids).toBeInstanceOf(Array);
    expect(c.choices[0]!.message.content).toBeTypeOf('string');
    const decoded = await r.detokenize(c.prompt_token_ids!);
    expect(decoded).toContain('You like to use emojis in your responses');
    expect(decoded).toContain('I love cats 🐱');
    let first = true;
    let content = '';
    const ids: number[] = [];
    for await (const chunk of await stream({ messages: m, max_tokens: 50, temperature: 0, return_token_ids: true })) {
      if (first) expect(await r.detokenize(chunk.prompt_token_ids!)).toBe(decoded);
      else expect(chunk).not.toHaveProperty('prompt_token_ids');
      first = false;
      content += chunk.choices[0]?.delta.content ?? '';
      ids.push(...(chunk.choices[0]?.token_ids ?? []));
    }
    expect(content.length).toBeGreaterThan(0);
    expect(ids.length).toBeGreaterThan(0);
  });

  it('test_chat_session_with_echo_and_continue_final_message (echo true and false)', async () => {
    const saying = 'Here is a common saying about apple. An apple a day, keeps';
    const m: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: 'tell me a common saying' }, { role: 'assistant', content: saying }];
    for (const echo of [true, false]) {
      const c = await create({ messages: m, max_tokens: 4, temperature: 0, echo, continue_final_message: true, add_generation_prompt: false, return_token_ids: true });
      expect(c.id).toBeTruthy();
      expect(c.choices).toHaveLength(1);
      const message = c.choices[0]!.message;
      expect(message.role).toBe('assistant');
      if (echo) expect(message.content).toContain(saying);
      else expect(message.content).not.toContain(saying);
      // The prompt stops inside the assistant message: the saying, then nothing (no end of turn).
      expect(await r.detokenize(c.prompt_token_ids!)).toMatch(/An apple a day, keeps$/);
      const cut = (await r.tokenize({ messages: m, add_generation_prompt: false, continue_final_message: true })).tokens;
      expect(c.prompt_token_ids).toEqual(cut);
    }
    await refused(create({ messages: m, max_tokens: 4, continue_final_message: true, add_generation_prompt: true }));
    await refused(create({ messages: m.slice(0, 1), max_tokens: 4, continue_final_message: true, add_generation_prompt: false }));
  });
});
