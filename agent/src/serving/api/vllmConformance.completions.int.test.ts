/**
 * vLLM's OpenAI-server tests for /v1/completions, their assertions that do not depend on the
 * model's text, ported to the official openai client against one real colocated rank (CPU,
 * tiny random-weight checkpoint). vLLM's tokenizer is replaced by the rank's /tokenize and
 * /detokenize; a request that leaves max_tokens to the window upstream gets a small one here
 * (a random model rarely samples EOS). Each case names the upstream test it ports
 * (vllm-project/vllm, tests/entrypoints/openai/):
 *
 *   completion/test_completion.py: test_single_completion, test_completion_truncation_side_controls_prompt_truncation,
 *     test_no_logprobs, test_zero_logprobs, test_some_logprobs, test_too_many_completion_logprobs,
 *     test_prompt_logprobs_completion, test_completion_streaming, test_parallel_no_streaming,
 *     test_parallel_streaming, test_completion_stream_options, test_batch_completions,
 *     test_echo_logprob_completion, test_invalid_json_schema, test_invalid_regex, test_invalid_grammar;
 *     from its 2025 revision: test_logits_bias, test_echo_stream_completion
 *   completion/test_prompt_validation.py: test_empty_prompt, test_out_of_vocab_token_ids
 *   completion/test_completion_error.py: test_negative_prompt_token_ids_flat / _nested
 *   completion/test_empty_prompt_list.py: test_empty_prompt_list_rejected, test_nonempty_prompt_list_ok
 *   completion/test_completion_text_offset.py: test_stream_text_offset_matches_non_stream_with_stop_holdback
 *   completion/test_token_in_token_out.py: test_token_in_token_out_and_logprobs
 *   basic/test_return_token_ids.py: test_basic_completion_with_emoji, test_comparison_with_prompt_logprobs_and_logprobs
 *
 * Assertions left out, and why:
 * - The chunk that carries finish_reason carries no text here (test_completion_streaming's
 *   `assert chunk.choices[0].text`; test_parallel_streaming's at most max_tokens chunks per
 *   choice): a choice ends with its own finish chunk, as OpenAI streams (docs/api.md, "Streams").
 * - test_batch_completions with n=2 and use_beam_search, test_allowed_token_ids: beam search and
 *   allowed_token_ids are refused (docs/api.md, the request table).
 * - Model-dependent ones: texts of at least 5 characters, samples that end at different lengths
 *   (needs EOS), prompt_tokens_details (a vLLM server flag), the guided-decoding outputs.
 * - test_invocations: the SageMaker /invocations route is not served (docs/api.md, "Endpoints").
 */
import OpenAI from 'openai';
import { describe, expect, it } from 'vitest';
import { testAddonBuilt } from '../../testing/agentBundle.js';
import { MODEL as model, useConformanceRank } from '../../testing/conformanceRank.js';
import { completionPositions, type CompletionLogprobs } from '../../testing/logprobPositions.js';
import type { VllmCompletionChoice, VllmFields } from '../../testing/vllmFields.js';

type Body = OpenAI.CompletionCreateParamsNonStreaming & VllmFields;
const r = useConformanceRank('afd-vllm-completions-');
const create = (body: Omit<Body, 'model'>): Promise<OpenAI.Completion> => r.client.completions.create({ model, ...body } as Body);
const stream = (body: Omit<Body, 'model'>): Promise<AsyncIterable<OpenAI.Completion>> => r.client.completions.create({ model, ...body, stream: true } as OpenAI.CompletionCreateParamsStreaming);
const choice = (c: OpenAI.Completion, i = 0): VllmCompletionChoice => c.choices[i] as VllmCompletionChoice;
const zeros = [0, 0, 0, 0, 0];

describe.skipIf(!testAddonBuilt())("vLLM's completion tests (real rank, openai client)", () => {
  it('test_single_completion', async () => {
    const c = await create({ prompt: 'Hello, my name is', max_tokens: 5, temperature: 0 });
    expect(c.id).toBeTruthy();
    expect(c.choices).toHaveLength(1);
    expect(c.choices[0]!.finish_reason).toBe('length');
    const promptTokens = (await r.tokenize({ prompt: 'Hello, my name is' })).count;
    expect(c.usage).toEqual({ completion_tokens: 5, prompt_tokens: promptTokens, total_tokens: promptTokens + 5 });
    expect(choice(await create({ prompt: zeros, max_tokens: 5, temperature: 0 })).prompt_logprobs ?? null).toBeNull();
  });

  it('test_completion_truncation_side_controls_prompt_truncation', async () => {
    const ids = [0, 1, 2, 3, 4, 5, 6, 7];
    const side = async (truncation_side: 'left' | 'right'): Promise<number[] | undefined> =>
      choice(await create({ prompt: ids, max_tokens: 1, temperature: 0, return_token_ids: true, truncate_prompt_tokens: 4, truncation_side })).prompt_token_ids;
    expect(await side('right')).toEqual(ids.slice(0, 4));
    expect(await side('left')).toEqual(ids.slice(-4));
  });

  it('test_no_logprobs, test_zero_logprobs, test_some_logprobs', async () => {
    expect(choice(await create({ prompt: zeros, max_tokens: 5, temperature: 0, logprobs: null })).logprobs).toBeNull();
    const zero = choice(await create({ prompt: zeros, max_tokens: 5, temperature: 0, logprobs: 0 })).logprobs!;
    expect(zero.token_logprobs).not.toBeNull();
    expect(Object.keys(zero.top_logprobs![0]!)).toHaveLength(1);
    const five = choice(await create({ prompt: zeros, max_tokens: 5, temperature: 0, logprobs: 5 })).logprobs!;
    expect(five.token_logprobs).not.toBeNull();
    expect(Object.keys(five.top_logprobs![0]!).length).toBeGreaterThanOrEqual(5);
    expect(Object.keys(five.top_logprobs![0]!).length).toBeLessThanOrEqual(6);
  });

  it('test_too_many_completion_logprobs', async () => {
    await expect(create({ prompt: zeros, max_tokens: 5, temperature: 0, logprobs: 21 })).rejects.toBeInstanceOf(OpenAI.BadRequestError);
    await expect(stream({ prompt: zeros, max_tokens: 5, temperature: 0, logprobs: 30 })).rejects.toBeInstanceOf(OpenAI.APIError);
    expect((await create({ prompt: zeros, max_tokens: 5, temperature: 0 })).choices[0]!.text).toBeTypeOf('string');
  });

  it('test_prompt_logprobs_completion (-1, 0, 1, None)', async () => {
    const prompt = ['A robot may not injure another robot', 'My name is'];
    await expect(create({ prompt, max_tokens: 5, prompt_logprobs: -1 })).rejects.toBeInstanceOf(OpenAI.BadRequestError);
    for (const k of [0, 1]) {
      const c = await create({ prompt, max_tokens: 5, prompt_logprobs: k });
      for (const i of [0, 1]) expect(choice(c, i).prompt_logprobs!.length, `prompt_logprobs ${k}, choice ${i}`).toBeGreaterThan(0);
    }
    expect(choice(await create({ prompt, max_tokens: 5 })).prompt_logprobs ?? null).toBeNull();
  });

  it('test_completion_streaming', async () => {
    const prompt = 'What is an LLM?';
    const single = (await create({ prompt, max_tokens: 5, temperature: 0 })).choices[0]!.text;
    const texts: string[] = [];
    let finishes = 0;
    let last: OpenAI.CompletionChoice | undefined;
    for await (const chunk of await stream({ prompt, max_tokens: 5, temperature: 0 })) {
      last = chunk.choices[0]!;
      texts.push(last.text);
      if (last.finish_reason !== null) finishes++;
    }
    expect(finishes).toBe(1);
    expect(last!.finish_reason).toBe('length');
    expect(texts.join('')).toBe(single);
  });

  it('test_parallel_no_streaming', async () => {
    const c = await create({ prompt: 'What is an LLM?', max_tokens: 50, n: 3, temperature: 1, logprobs: 0, seed: 42 });
    expect(c.choices).toHaveLength(3);
    c.choices.forEach((ch, i) => {
      expect(ch.index).toBe(i);
      expect(ch.finish_reason).not.toBeNull();
    });
    expect(new Set(c.choices.map((ch) => ch.text)).size).toBe(3);
  });

  it('test_parallel_streaming', async () => {
    const texts = ['', '', ''];
    let finishes = 0;
    for await (const chunk of await stream({ prompt: 'What is an LLM?', max_tokens: 50, n: 3, temperature: 1, seed: 42 })) {
      const ch = chunk.choices[0]!;
      texts[ch.index] += ch.text;
      if (ch.finish_reason !== null) finishes++;
    }
    expect(finishes).toBe(3);
    expect(new Set(texts).size).toBe(3);
  });

  it('test_completion_stream_options', async () => {
    const base = { prompt: 'What is the capital of France?', max_tokens: 5, temperature: 0 };
    const chunksOf = async (stream_options: OpenAI.ChatCompletionStreamOptions & { continuous_usage_stats?: boolean }): Promise<OpenAI.Completion[]> => {
      const out: OpenAI.Completion[] = [];
      for await (const chunk of await stream({ ...base, stream_options })) out.push(chunk);
      return out;
    };
    const sums = (u: OpenAI.CompletionUsage): void => {
      expect(u.prompt_tokens).toBeGreaterThan(0);
      expect(u.completion_tokens).toBeGreaterThan(0);
      expect(u.total_tokens).toBe(u.prompt_tokens + u.completion_tokens);
    };
    for (const o of [{ include_usage: false, continuous_usage_stats: false }, { include_usage: false, continuous_usage_stats: true }, {}]) {
      for (const chunk of await chunksOf(o)) expect(chunk.usage ?? null, JSON.stringify(o)).toBeNull();
    }
    for (const continuous of [false, true]) {
      const chunks = await chunksOf({ include_usage: true, continuous_usage_stats: continuous });
      const end = chunks.findIndex((c) => c.choices[0]?.finish_reason);
      for (const c of chunks.slice(0, end + 1)) {
        if (continuous) sums(c.usage!);
        else expect(c.usage ?? null).toBeNull();
      }
      const final = chunks[end + 1]!;
      sums(final.usage!);
      expect(final.choices).toEqual([]);
    }
    for (const stream_options of [{ include_usage: null }, { include_usage: true }, { continuous_usage_stats: null }, { continuous_usage_stats: true }]) {
      await expect(create({ ...base, stream: false, stream_options } as Omit<Body, 'model'>), JSON.stringify(stream_options)).rejects.toBeInstanceOf(OpenAI.BadRequestError);
    }
  });

  it('test_batch_completions (without the beam-search part)', async () => {
    for (const prompt of [['Hello, my name is', 'Hello, my name is'], [zeros, zeros]]) {
      const batch = await create({ prompt, max_tokens: 5, temperature: 0 });
      expect(batch.choices).toHaveLength(2);
      expect(batch.choices[0]!.text).toBe(batch.choices[1]!.text);
      const texts = ['', ''];
      for await (const chunk of await stream({ prompt, max_tokens: 5, temperature: 0 })) {
        expect(chunk.choices).toHaveLength(1);
        texts[chunk.choices[0]!.index] += chunk.choices[0]!.text;
      }
      expect(texts[0]).toBe(texts[1]);
    }
  });

  it('test_echo_logprob_completion (logprobs 1 and 0; text and token-id prompts)', async () => {
    for (const k of [1, 0]) {
      for (const prompt of ['Hello, my name is', zeros]) {
        const c = choice(await create({ prompt, max_tokens: 5, temperature: 0, echo: true, logprobs: k }));
        const promptText = typeof prompt === 'string' ? prompt : await r.detokenize(prompt);
        expect(c.text.startsWith(promptText), `${JSON.stringify(prompt)}: ${c.text}`).toBe(true);
        const lp = c.logprobs!;
        expect(lp.text_offset!.length).toBeGreaterThan(5);
        expect(lp.token_logprobs!.length).toBeGreaterThan(5);
        expect(lp.token_logprobs![0]).toBeNull();
        expect(lp.top_logprobs![0]).toBeNull();
        for (const top of lp.top_logprobs!.slice(1)) {
          expect(Object.keys(top!).length).toBeGreaterThanOrEqual(Math.max(k, 1));
          expect(Object.keys(top!).length).toBeLessThanOrEqual(k + 1);
        }
        expect(lp.tokens!.length).toBeGreaterThan(5);
      }
    }
  });

  it('test_invalid_json_schema, test_invalid_regex, test_invalid_grammar (structured outputs are refused)', async () => {
    for (const structured_outputs of [{ json: { type: 'object', properties: { foo: 'bar' } } }, { regex: '[.*' }, { grammar: 'root ::= select_statementinvalidsyntax' }]) {
      await expect(create({ prompt: 'Generate', structured_outputs })).rejects.toBeInstanceOf(OpenAI.BadRequestError);
    }
  });

  it('test_logits_bias: +100 selects one token; -100 on the greedy tokens changes the output', async () => {
    const ids = async (body: Partial<Body>): Promise<number[]> => choice(await create({ prompt: 'Hello, my name is', max_tokens: 5, temperature: 0, return_token_ids: true, ...body })).token_ids!;
    expect(await ids({ logit_bias: { '1000': 100 }, seed: 42 })).toEqual([1000, 1000, 1000, 1000, 1000]);
    const first = await ids({});
    const banned = await ids({ logit_bias: Object.fromEntries(first.map((t) => [String(t), -100])) });
    expect(banned).not.toEqual(first);
    expect(banned.some((t) => first.includes(t))).toBe(false);
  });

  it('test_echo_stream_completion (stream and echo, each on and off)', async () => {
    const saying = 'Hello, my name is';
    for (const echo of [false, true]) {
      const c = choice(await create({ prompt: saying, max_tokens: 10, temperature: 0, echo }));
      expect(c.finish_reason).toBe('length');
      expect(c.text.includes(saying)).toBe(echo);
      let content = '';
      let finish: string | null = null;
      for await (const chunk of await stream({ prompt: saying, max_tokens: 10, temperature: 0, echo })) {
        content += chunk.choices[0]?.text ?? '';
        finish = chunk.choices[0]?.finish_reason ?? finish;
      }
      expect(finish).toBe('length');
      expect(content.includes(saying)).toBe(echo);
    }
  });

  it('test_out_of_vocab_token_ids, test_empty_prompt, test_negative_prompt_token_ids_*, test_empty_prompt_list_*', async () => {
    await expect(create({ prompt: [999999], max_tokens: 5, temperature: 0 })).rejects.toThrow(/999999 is outside the vocabulary/); // vLLM: "out of vocabulary"
    await expect(create({ prompt: null, max_tokens: 5, prompt_embeds: [] } as unknown as Body)).rejects.toBeInstanceOf(OpenAI.BadRequestError);
    for (const prompt of [[-1], [[-1]], []]) await expect(create({ prompt, max_tokens: 10 }), JSON.stringify(prompt)).rejects.toBeInstanceOf(OpenAI.BadRequestError);
    expect((await create({ prompt: ['hello'], max_tokens: 2 })).choices).toHaveLength(1);
  });

  it('test_stream_text_offset_matches_non_stream_with_stop_holdback', async () => {
    const body = { prompt: 'Hi', max_tokens: 8, temperature: 0, logprobs: 0, stop: ['\n\n'] };
    const plain = choice(await create(body)).logprobs!.text_offset;
    const streamed: number[] = [];
    for await (const chunk of await stream(body)) streamed.push(...(chunk.choices[0]?.logprobs?.text_offset ?? []));
    expect(streamed).toEqual(plain);
  });

  it('test_token_in_token_out_and_logprobs', async () => {
    const text = 'Hello, world! How are you today?';
    const { tokens } = await r.tokenize({ prompt: text });
    const c = choice(await create({ prompt: tokens, max_tokens: 20, temperature: 0, echo: true, return_token_ids: true }));
    expect(c.token_ids!.length).toBeGreaterThan(0);
    expect(c.token_ids!.length).toBeLessThanOrEqual(20);
    expect(await r.detokenize(c.prompt_token_ids!)).toBe(text);
  });

  it('test_basic_completion_with_emoji', async () => {
    const prompt = 'Complete this sentence with emojis: I love coding 🚀';
    const c = choice(await create({ prompt, max_tokens: 10, temperature: 0, logprobs: 1, return_token_ids: true }));
    const encoded = (await r.tokenize({ prompt })).tokens;
    const ids = c.prompt_token_ids!;
    expect(ids.some((_, i) => encoded.every((t, j) => ids[i + j] === t))).toBe(true);
    expect(c.token_ids!.length).toBeGreaterThan(0);
    expect((await r.detokenize(c.token_ids!)).startsWith(c.text)).toBe(true);
    const without = choice(await create({ prompt, max_tokens: 10, temperature: 0, logprobs: 1, return_token_ids: false }));
    expect(without.token_ids ?? null).toBeNull();
    expect(without.prompt_token_ids ?? null).toBeNull();
  });

  it('test_comparison_with_prompt_logprobs_and_logprobs', async () => {
    const ids = { return_token_ids: true, return_tokens_as_token_ids: true };
    const c = choice(await create({ prompt: 'Hello, world! How are you today?', max_tokens: 20, temperature: 0, echo: true, logprobs: 1, prompt_logprobs: 1, ...ids }));
    expect(c.prompt_logprobs).not.toBeNull();
    const logprobIds = completionPositions(c.logprobs as CompletionLogprobs).map((p) => p.id);
    expect(c.token_ids!.length).toBeLessThan(logprobIds.length);
    expect(logprobIds.slice(-c.token_ids!.length)).toEqual(c.token_ids);
    expect(await r.detokenize(c.prompt_token_ids!)).toContain('Hello, world');
    expect(c.text.endsWith(await r.detokenize(c.token_ids!))).toBe(true);

    const streamedIds: number[] = [];
    const streamedLogprobIds: number[] = [];
    let promptIds: number[] | undefined;
    for await (const chunk of await stream({ prompt: 'Tell me a short fact about Python:', max_tokens: 30, temperature: 0, logprobs: 1, ...ids })) {
      const ch = chunk.choices[0] as VllmCompletionChoice;
      streamedLogprobIds.push(...completionPositions(ch.logprobs as CompletionLogprobs | null).map((p) => p.id));
      promptIds ??= ch.prompt_token_ids;
      streamedIds.push(...ch.token_ids!);
    }
    expect(promptIds!.length).toBeGreaterThan(0);
    expect(streamedIds).toEqual(streamedLogprobIds);
  });
});
