/**
 * A Responses request translated to the chat machinery: the conversation as chat messages,
 * the tools and tool_choice as the template and the grammar need them, text.format as the
 * GrammarSpec, the sampling fields as the chat route's GenerateParams.
 */
import { describe, expect, it } from 'vitest';
import { toGenerateParams } from '../requestParams.js';
import { toTemplateMessages } from './inputMessages.js';
import { planResponse } from './requestPlan.js';
import { responsesRequestSchema } from './responsesSchema.js';
import { planTools } from './responseTools.js';
import { textFormatGrammar } from './textFormat.js';
import { apiErrorOf } from '../../testing/apiErrorOf.js';

const parse = (over: Record<string, unknown>) => responsesRequestSchema.parse({ model: 'tiny', input: 'hi', ...over });

const errorOf = apiErrorOf;

const weather = { type: 'function', name: 'get_weather', description: 'Weather', parameters: { type: 'object', properties: { city: { type: 'string' } } }, strict: true };
const time = { type: 'function', name: 'get_time', parameters: null, strict: null };

describe('toTemplateMessages', () => {
  it('instructions first, developer as system, text parts joined', () => {
    const r = parse({ instructions: 'Be brief.', input: [{ role: 'developer', content: 'French.' }, { role: 'user', content: [{ type: 'input_text', text: 'a' }, { type: 'input_text', text: 'b' }] }] });
    expect(toTemplateMessages(r)).toEqual([
      { role: 'system', content: 'Be brief.' },
      { role: 'system', content: 'French.' },
      { role: 'user', content: 'ab' },
    ]);
    expect(toTemplateMessages(parse({ input: 'hello' }))).toEqual([{ role: 'user', content: 'hello' }]);
  });

  it('calls after the assistant text join its message; outputs become tool messages', () => {
    const r = parse({
      input: [
        { role: 'user', content: 'Weather and time?' },
        { type: 'message', role: 'assistant', status: 'completed', id: 'msg_1', content: [{ type: 'output_text', text: 'Looking.', annotations: [], logprobs: [] }] },
        { type: 'function_call', id: 'fc_1', call_id: 'c1', name: 'get_weather', arguments: '{"city": "Paris"}', status: 'completed' },
        { type: 'function_call', call_id: 'c2', name: 'get_time', arguments: '{}' },
        { type: 'function_call_output', call_id: 'c1', output: 'Sunny' },
        { type: 'function_call_output', call_id: 'c2', output: [{ type: 'input_text', text: '12:00' }] },
      ],
    });
    expect(toTemplateMessages(r)).toEqual([
      { role: 'user', content: 'Weather and time?' },
      {
        role: 'assistant',
        content: 'Looking.',
        tool_calls: [
          { id: 'c1', type: 'function', function: { name: 'get_weather', arguments: { city: 'Paris' } } },
          { id: 'c2', type: 'function', function: { name: 'get_time', arguments: {} } },
        ],
      },
      { role: 'tool', content: 'Sunny', tool_call_id: 'c1' },
      { role: 'tool', content: '12:00', tool_call_id: 'c2' },
    ]);
  });

  it('refuses arguments that are not a JSON object, and an output with no call before it', () => {
    const call = (args: string) => parse({ input: [{ type: 'function_call', call_id: 'c', name: 'f', arguments: args }] });
    expect(errorOf(() => toTemplateMessages(call('{"a": '))).param).toBe('input.0.arguments');
    expect(errorOf(() => toTemplateMessages(call('[1]'))).message).toMatch(/must be a JSON object/);
    const early = parse({ input: [{ type: 'function_call_output', call_id: 'c', output: 'x' }, { type: 'function_call', call_id: 'c', name: 'f', arguments: '{}' }] });
    expect(errorOf(() => toTemplateMessages(early))).toMatchObject({ param: 'input.0.call_id' });
  });
});

describe('planTools', () => {
  const plan = (over: Record<string, unknown>) => planTools(parse(over));

  it('auto shows every tool in the chat shape; none shows none; allowed_tools shows the allowed', () => {
    expect(plan({ tools: [weather, time] })).toEqual({
      templateTools: [
        { type: 'function', function: { name: 'get_weather', description: 'Weather', parameters: weather.parameters } },
        { type: 'function', function: { name: 'get_time' } },
      ],
      parseCalls: true,
      forced: null,
    });
    expect(plan({ tools: [weather], tool_choice: 'none' })).toEqual({ templateTools: [], parseCalls: false, forced: null });
    expect(plan({})).toEqual({ templateTools: [], parseCalls: false, forced: null });
    const allowed = plan({ tools: [weather, time], tool_choice: { type: 'allowed_tools', mode: 'auto', tools: [{ type: 'function', name: 'get_time' }] } });
    expect(allowed.templateTools.map((t) => t.function.name)).toEqual(['get_time']);
    expect(allowed.forced).toBeNull();
  });

  it('required, a named function and required allowed_tools force calls (in the chat shape)', () => {
    expect(plan({ tools: [weather], tool_choice: 'required' }).forced).toBe('required');
    expect(plan({ tools: [weather, time], tool_choice: { type: 'function', name: 'get_time' } })).toMatchObject({ forced: { type: 'function', function: { name: 'get_time' } }, templateTools: [{ function: { name: 'get_time' } }] });
    expect(plan({ tools: [weather], tool_choice: { type: 'allowed_tools', mode: 'required', tools: [{ type: 'function', name: 'get_weather' }] } }).forced).toBe('required');
  });

  it('refuses duplicate names, unknown named tools and required without tools', () => {
    expect(errorOf(() => plan({ tools: [weather, weather] })).param).toBe('tools.1.name');
    expect(errorOf(() => plan({ tools: [weather], tool_choice: { type: 'allowed_tools', mode: 'auto', tools: [{ type: 'function', name: 'nope' }] } })).param).toBe('tool_choice.tools');
    expect(errorOf(() => plan({ tool_choice: 'required' })).message).toMatch(/needs at least one function/);
  });
});

describe('textFormatGrammar', () => {
  it('text is none; json_object and json_schema become GrammarSpecs naming text.format', () => {
    expect(textFormatGrammar(undefined)).toBeNull();
    expect(textFormatGrammar({ type: 'text' })).toBeNull();
    expect(textFormatGrammar({ type: 'json_object' })).toEqual({ type: 'json_object', param: 'text.format' });
    const schema = { type: 'object', properties: { a: { type: 'integer' } }, required: ['a'] };
    expect(textFormatGrammar({ type: 'json_schema', name: 'thing', schema, strict: true })).toEqual({ type: 'json_schema', schema, param: 'text.format.schema' });
  });
});

describe('planResponse', () => {
  it('samples as the chat route would: OpenAI and vLLM fields to GenerateParams', () => {
    const p = planResponse(parse({ temperature: 0.5, top_p: 0.9, max_output_tokens: 12, seed: 3, top_k: 5, stop: ['END'], repetition_penalty: 1.1, logit_bias: { '7': 2 }, ignore_eos: true, include: ['message.output_text.logprobs'], top_logprobs: 4 }));
    expect(p.logprobs).toBe(true);
    const g = toGenerateParams(p.chat, [1, 2, 3], 'chat');
    expect(g).toMatchObject({ promptIds: [1, 2, 3], maxTokens: 12, stop: ['END'], ignoreEos: true, logprobs: 4, n: 1, sampling: { temperature: 0.5, topP: 0.9, topK: 5, seed: 3 }, penalties: { repetition: 1.1 } });
    expect(g.logitBias?.get(7)).toBe(2);
    expect(toGenerateParams(planResponse(parse({})).chat, [1], 'chat')).toMatchObject({ maxTokens: undefined, sampling: { temperature: 1, topP: 1 } });
    expect(toGenerateParams(planResponse(parse({})).chat, [1], 'chat').logprobs).toBeUndefined();
  });

  it('passes tools and chat_template_kwargs to the template; refuses keys the server sets', () => {
    const p = planResponse(parse({ tools: [time], chat_template_kwargs: { enable_thinking: false } }));
    expect(p.templateVars).toEqual({ enable_thinking: false, tools: [{ type: 'function', function: { name: 'get_time' } }] });
    expect(planResponse(parse({ tools: [time], tool_choice: 'none' })).templateVars).toEqual({});
    expect(errorOf(() => planResponse(parse({ chat_template_kwargs: { tools: [] } }))).param).toBe('chat_template_kwargs.tools');
  });

  it('checks across fields: stream_options with stream, top_logprobs with include, logprobs not with tools', () => {
    expect(errorOf(() => planResponse(parse({ stream_options: { include_obfuscation: false } }))).param).toBe('stream_options');
    expect(() => planResponse(parse({ stream: true, stream_options: { include_obfuscation: false } }))).not.toThrow();
    expect(errorOf(() => planResponse(parse({ top_logprobs: 2 }))).param).toBe('top_logprobs');
    expect(errorOf(() => planResponse(parse({ tools: [time], include: ['message.output_text.logprobs'] }))).param).toBe('include');
    expect(() => planResponse(parse({ tools: [time], tool_choice: 'none', include: ['message.output_text.logprobs'] }))).not.toThrow();
  });
});
