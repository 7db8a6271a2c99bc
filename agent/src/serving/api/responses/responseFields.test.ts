/**
 * The /v1/responses request table against the zod schema, the openai client's
 * ResponseCreateParams and docs/api.md: a field cannot be in one and not the others. And its
 * checks: unknown fields, refused fields (neutral values accepted), refused values.
 */
import { readFileSync } from 'node:fs';
import type { ResponseCreateParamsBase } from 'openai/resources/responses/responses';
import { describe, expect, it } from 'vitest';
import { checkResponseFields, responseFields } from './responseFields.js';
import { checkResponseValues } from './refusedValues.js';
import { responsesRequestSchema } from './responsesSchema.js';
import { apiErrorOf } from '../../testing/apiErrorOf.js';

const body = { model: 'tiny', input: 'hi' };

const errorOf = apiErrorOf;

/** Every field of the client's ResponseCreateParams (a missing or extra key fails to compile). */
const openAiFields: Record<keyof ResponseCreateParamsBase, true> = {
  background: true,
  context_management: true,
  conversation: true,
  include: true,
  input: true,
  instructions: true,
  max_output_tokens: true,
  metadata: true,
  model: true,
  moderation: true,
  parallel_tool_calls: true,
  previous_response_id: true,
  prompt: true,
  prompt_cache_key: true,
  prompt_cache_options: true,
  prompt_cache_retention: true,
  reasoning: true,
  safety_identifier: true,
  service_tier: true,
  store: true,
  stream: true,
  stream_options: true,
  temperature: true,
  text: true,
  tool_choice: true,
  tools: true,
  top_logprobs: true,
  top_p: true,
  truncation: true,
  user: true,
};

describe('responses request table', () => {
  it('has exactly the fields of the schema', () => {
    expect(Object.keys(responsesRequestSchema.shape).sort()).toEqual(Object.keys(responseFields).sort());
  });

  it("covers every field of the openai client's ResponseCreateParams, and max_tool_calls of the API reference", () => {
    const openai = Object.keys(responseFields).filter((n) => responseFields[n]!.origin === 'openai');
    expect(openai.sort()).toEqual([...Object.keys(openAiFields), 'max_tool_calls'].sort());
  });

  it('is documented field by field in the Responses section of docs/api.md', () => {
    const doc = readFileSync(new URL('../../../../../docs/api.md', import.meta.url), 'utf8');
    const start = doc.indexOf('\n## Responses API\n');
    expect(start).toBeGreaterThan(0);
    const section = doc.slice(start, doc.indexOf('\n## ', start + 1));
    const missing = Object.keys(responseFields).filter((name) => !section.includes(`| \`${name}\` |`));
    expect(missing).toEqual([]);
  });

  it('refuses an unknown field by name, as OpenAI does', () => {
    const err = errorOf(() => checkResponseFields({ ...body, messages: [] }));
    expect(err).toMatchObject({ status: 400, param: 'messages', code: 'unknown_parameter' });
    expect(err.message).toMatch(/^Unrecognized request argument supplied: messages/);
    expect(errorOf(() => checkResponseFields('x')).status).toBe(400);
  });

  it('refuses every refused field with a reason, and accepts it absent, null or neutral', () => {
    const refused = Object.keys(responseFields).filter((n) => responseFields[n]!.status.kind === 'refused');
    expect(refused).toEqual(expect.arrayContaining(['store', 'previous_response_id', 'background', 'conversation', 'reasoning', 'truncation', 'prompt']));
    for (const name of refused) {
      const err = errorOf(() => checkResponseFields({ ...body, [name]: 'probe' }));
      expect(err).toMatchObject({ status: 400, param: name, code: 'unsupported_parameter' });
      expect(err.message.startsWith(`${name}: `)).toBe(true);
      expect(() => checkResponseFields({ ...body, [name]: null })).not.toThrow();
    }
    const neutral = { store: false, background: false, truncation: 'disabled', service_tier: 'default', reasoning: { effort: null, summary: null }, priority: 0, context_management: [], enable_response_messages: false };
    expect(() => checkResponseFields({ ...body, ...neutral })).not.toThrow();
    expect(errorOf(() => checkResponseFields({ ...body, store: true })).message).toMatch(/^store: this server stores no responses/);
  });

  it('refuses input items, parts, tools, tool_choice types and include values it cannot serve, naming their path', () => {
    const param = (b: Record<string, unknown>): string | null => errorOf(() => checkResponseValues(b)).param;
    expect(param({ input: [{ role: 'user', content: 'a' }, { type: 'reasoning', summary: [] }] })).toBe('input.1.type');
    expect(param({ input: [{ type: 'function_call_output', call_id: 'c', output: [{ type: 'input_file', file_id: 'f' }] }] })).toBe('input.0.output.0.type');
    expect(param({ input: [{ role: 'assistant', content: [{ type: 'refusal', refusal: 'no' }] }] })).toBe('input.0.content.0.type');
    expect(param({ tools: [{ type: 'function', name: 'f' }, { type: 'file_search', vector_store_ids: [] }] })).toBe('tools.1.type');
    expect(param({ tools: [{ type: 'custom', name: 'c' }] })).toBe('tools.0.type');
    expect(param({ tool_choice: { type: 'mcp', server_label: 'x' } })).toBe('tool_choice.type');
    expect(param({ include: ['message.output_text.logprobs', 'file_search_call.results'] })).toBe('include.1');
    expect(() => checkResponseValues({ input: [{ role: 'user', content: [{ type: 'input_text', text: 'a' }] }, { type: 'function_call', call_id: 'c', name: 'f', arguments: '{}' }], tools: [{ type: 'function', name: 'f' }], tool_choice: 'auto', include: ['message.output_text.logprobs'] })).not.toThrow();
  });

  it('the schema refuses fields of items it would not use, naming their path', () => {
    const issue = (input: unknown[]): string => responsesRequestSchema.safeParse({ ...body, input }).error!.issues.map((i) => [...i.path, ...(i.code === 'unrecognized_keys' ? i.keys : [])].join('.')).join(',');
    expect(issue([{ role: 'user', content: 'a', name: 'bob' }])).toBe('input.0.name');
    expect(issue([{ role: 'assistant', content: 'a', phase: 'final_answer' }])).toBe('input.0.phase');
    expect(issue([{ type: 'function_call', call_id: 'c', name: 'f', arguments: '{}', namespace: 'ns' }])).toBe('input.0.namespace');
    expect(issue([{ type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'a', annotations: [{ type: 'url_citation' }] }] }])).toBe('input.0.content.0.annotations');
    expect(responsesRequestSchema.safeParse({ ...body, text: { verbosity: 'low' } }).error!.issues[0]!.path).toEqual(['text', 'verbosity']);
    expect(responsesRequestSchema.safeParse({ ...body, metadata: Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`k${i}`, 'v'])) }).success).toBe(false);
  });
});
