/**
 * The request table against the zod schemas and docs/api.md: a field cannot be in one and
 * not the others. And its checks: unknown fields, the other endpoint's fields, refused
 * fields (neutral values accepted), fields smuggled through chat_template_kwargs, and the
 * cross-field rules of requestParams.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { checkRequestFields, fieldsOf, requestFields, type Endpoint } from './requestFields.js';
import { checkChatOnly, responseOptions, toGenerateParams } from './requestParams.js';
import { chatRequestSchema, completionRequestSchema } from './schemas.js';
import { apiErrorOf } from '../testing/apiErrorOf.js';

const schemas = { chat: chatRequestSchema, completions: completionRequestSchema };
const endpoints: Endpoint[] = ['chat', 'completions'];
const chatBody = { model: 'tiny', messages: [{ role: 'user', content: 'hi' }] };
const completionBody = { model: 'tiny', prompt: 'hi' };
const bodyOf = (e: Endpoint): Record<string, unknown> => (e === 'chat' ? chatBody : completionBody);

const errorOf = apiErrorOf;

describe('request table', () => {
  it.each(endpoints)('has exactly the fields of the %s schema', (e) => {
    expect(Object.keys(schemas[e].shape).sort()).toEqual(fieldsOf(e).sort());
  });

  it('is documented field by field in docs/api.md', () => {
    const doc = readFileSync(new URL('../../../../docs/api.md', import.meta.url), 'utf8');
    const missing = Object.keys(requestFields).filter((name) => !doc.includes(`| \`${name}\` |`));
    expect(missing).toEqual([]);
  });

  it('refuses an unknown field and the other endpoint\'s field by name', () => {
    const unknown = errorOf(() => checkRequestFields({ ...chatBody, temprature: 0 }, 'chat'));
    expect(unknown).toMatchObject({ status: 400, param: 'temprature', code: 'unknown_parameter' });
    expect(unknown.message).toMatch(/Unrecognized request argument supplied: temprature/);
    expect(errorOf(() => checkRequestFields({ ...completionBody, messages: [] }, 'completions'))).toMatchObject({ param: 'messages', message: expect.stringMatching(/a \/v1\/chat\/completions field/) });
    expect(errorOf(() => checkRequestFields([1], 'chat'))).toMatchObject({ status: 400 });
  });

  it.each(endpoints)('refuses every refused %s field with a reason, and accepts it absent, null or neutral', (e) => {
    const refused = fieldsOf(e).filter((name) => requestFields[name]!.status.kind === 'refused');
    expect(refused.length).toBeGreaterThan(20);
    for (const name of refused) {
      const err = errorOf(() => checkRequestFields({ ...bodyOf(e), [name]: 'probe' }, e));
      expect(err).toMatchObject({ status: 400, param: name, code: 'unsupported_parameter' });
      expect(err.message.startsWith(`${name}: `)).toBe(true);
      expect(() => checkRequestFields({ ...bodyOf(e), [name]: null }, e)).not.toThrow();
    }
    const neutral: Record<string, unknown> = { use_beam_search: false, length_penalty: 1, response_format: { type: 'text' }, priority: 0, bad_words: [], add_special_tokens: e === 'completions' };
    if (e === 'chat') Object.assign(neutral, { functions: [], function_call: 'none', store: false, service_tier: 'auto', include_reasoning: true, modalities: ['text'] });
    else Object.assign(neutral, { best_of: 1, suffix: '' });
    expect(() => checkRequestFields({ ...bodyOf(e), ...neutral }, e)).not.toThrow();
    expect(errorOf(() => checkRequestFields({ ...bodyOf(e), add_special_tokens: e !== 'completions' }, e)).param).toBe('add_special_tokens');
  });

  it('says why for the fields the issue names: functions, guided_whitespace_pattern, structural_tag, best_of, suffix', () => {
    const msg = (body: object, e: Endpoint): string => errorOf(() => checkRequestFields(body, e)).message;
    expect(msg({ ...chatBody, functions: [{ name: 'f' }] }, 'chat')).toMatch(/^functions: deprecated by OpenAI; send each function as a tool/);
    expect(msg({ ...chatBody, function_call: 'auto' }, 'chat')).toMatch(/^function_call: deprecated by OpenAI; send tool_choice/);
    // Structured outputs work (the values are checked by grammar/requestGrammar.ts); a whitespace pattern and structural tags do not.
    for (const f of [{ response_format: { type: 'json_object' } }, { guided_json: {} }, { structured_outputs: { json: {} } }]) expect(() => checkRequestFields({ ...completionBody, ...f }, 'completions')).not.toThrow();
    expect(msg({ ...completionBody, guided_whitespace_pattern: ' ' }, 'completions')).toMatch(/^guided_whitespace_pattern: a custom whitespace pattern is not supported/);
    expect(msg({ ...chatBody, structural_tag: '{}' }, 'chat')).toMatch(/^structural_tag: structural tags are not supported/);
    expect(msg({ ...completionBody, best_of: 3 }, 'completions')).toMatch(/OpenAI removed best_of.*send n/);
    expect(msg({ ...completionBody, suffix: 'end' }, 'completions')).toMatch(/^suffix: insertion .* is not supported/);
  });
});

describe('cross-field rules', () => {
  const chat = (over: object) => chatRequestSchema.parse({ ...chatBody, ...over });
  const completion = (over: object) => completionRequestSchema.parse({ ...completionBody, ...over });

  it('refuses fields smuggled through chat_template_kwargs, and template variables the server sets', () => {
    expect(errorOf(() => checkChatOnly(chat({ chat_template_kwargs: { tools: [] } })))).toMatchObject({ param: 'chat_template_kwargs.tools', message: expect.stringMatching(/send the top-level tools/) });
    expect(errorOf(() => checkChatOnly(chat({ chat_template_kwargs: { response_format: {} } })))).toMatchObject({ param: 'chat_template_kwargs.response_format' });
    expect(errorOf(() => checkChatOnly(chat({ chat_template_kwargs: { add_generation_prompt: false } })))).toMatchObject({ param: 'chat_template_kwargs.add_generation_prompt', message: expect.stringMatching(/send the top-level add_generation_prompt/) });
    expect(() => checkChatOnly(chat({ chat_template_kwargs: { enable_thinking: false } }))).not.toThrow();
  });

  it('stream_options only with stream, prompt_logprobs not with stream, top_logprobs only with logprobs, max_tokens 0 only with echo', () => {
    expect(errorOf(() => toGenerateParams(chat({ stream_options: { include_usage: true } }), [1], 'chat'))).toMatchObject({ param: 'stream_options' });
    expect(errorOf(() => toGenerateParams(completion({ prompt_logprobs: 0, stream: true }), [1], 'completions'))).toMatchObject({ param: 'prompt_logprobs' });
    expect(errorOf(() => toGenerateParams(chat({ top_logprobs: 2 }), [1], 'chat'))).toMatchObject({ param: 'top_logprobs' });
    expect(errorOf(() => toGenerateParams(completion({ max_tokens: 0 }), [1], 'completions'))).toMatchObject({ param: 'max_tokens' });
    expect(toGenerateParams(completion({ max_tokens: 0, echo: true }), [1], 'completions').maxTokens).toBe(1);
  });

  it('builds GenerateParams: penalties only when on, logit_bias as a map, logprobs per endpoint, echo asks prompt logprobs, truncation', () => {
    const p = toGenerateParams(completion({ presence_penalty: 0.5, logit_bias: { '42': 100, '7': -100 }, logprobs: 0, echo: true, min_p: 0.1, truncate_prompt_tokens: 2 }), [1, 2, 3], 'completions');
    expect(p).toMatchObject({ penalties: { presence: 0.5, frequency: 0, repetition: 1 }, logitBias: new Map([[42, 100], [7, -100]]), logprobs: 0, promptLogprobs: 0, promptIds: [2, 3], sampling: { minP: 0.1 } });
    expect(toGenerateParams(completion({ truncate_prompt_tokens: 2, truncation_side: 'right' }), [1, 2, 3], 'completions').promptIds).toEqual([1, 2]);
    expect(toGenerateParams(completion({ frequency_penalty: 0 }), [1], 'completions').penalties).toBeUndefined();
    expect(toGenerateParams(chat({ logprobs: true, top_logprobs: 3, prompt_logprobs: 1 }), [1], 'chat')).toMatchObject({ logprobs: 3, promptLogprobs: 1 });
    expect(toGenerateParams(chat({ logprobs: false }), [1], 'chat').logprobs).toBeUndefined();
    expect(responseOptions(chat({ return_token_ids: true, return_tokens_as_token_ids: true }), 'chat')).toMatchObject({ returnTokenIds: true, tokensAsIds: true });
  });

  it('validates values: logit_bias keys and range, penalties, top_logprobs 0..20', () => {
    expect(() => completion({ logit_bias: { abc: 1 } })).toThrow(/keys are token ids/);
    expect(() => completion({ logit_bias: { '1': 101 } })).toThrow();
    expect(() => completion({ presence_penalty: 2.5 })).toThrow();
    expect(() => completion({ repetition_penalty: 0 })).toThrow();
    expect(() => chat({ top_logprobs: 21 })).toThrow(/at most 20/);
    expect(() => completion({ logprobs: 21 })).toThrow(/at most 20/);
    expect(() => chat({ stream: true, stream_options: { include_obfuscation: true } })).toThrow(/does not pad/);
    expect(() => chat({ stream: true, stream_options: { includeUsage: true } })).toThrow();
  });
});
