import { describe, expect, it } from 'vitest';
import { openaiRequestBody } from './openaiRequestBody.js';

const sampling = { temperature: 0.2, topP: 0.9, topK: 0, maxTokens: 64, seed: null };

describe('openaiRequestBody', () => {
  it('sends the structured output and tool fields, and the tool turns, as given', () => {
    const tools = [{ type: 'function' as const, function: { name: 'get_weather', parameters: { type: 'object' } } }];
    const messages = [
      { role: 'user' as const, content: 'Weather in Paris?' },
      { role: 'assistant' as const, content: null, tool_calls: [{ id: 'call_1', type: 'function' as const, function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }] },
      { role: 'tool' as const, content: '18 C', tool_call_id: 'call_1' },
    ];
    const r = openaiRequestBody(
      {
        mode: 'chat',
        messages,
        sampling: { ...sampling, topK: 20, seed: 7 },
        response_format: { type: 'json_schema', json_schema: { name: 'w', schema: { type: 'object' }, strict: true } },
        tools,
        tool_choice: 'required',
        parallel_tool_calls: false,
      },
      'tiny',
    );
    expect(r).toEqual({
      path: '/v1/chat/completions',
      body: {
        model: 'tiny',
        messages,
        temperature: 0.2,
        top_p: 0.9,
        max_tokens: 64,
        seed: 7,
        top_k: 20,
        response_format: { type: 'json_schema', json_schema: { name: 'w', schema: { type: 'object' }, strict: true } },
        tools,
        tool_choice: 'required',
        parallel_tool_calls: false,
      },
    });
  });

  it('leaves out what is not set', () => {
    const r = openaiRequestBody({ mode: 'chat', messages: [{ role: 'user', content: 'hi' }], sampling }, 'm');
    expect(Object.keys(r.body).sort()).toEqual(['max_tokens', 'messages', 'model', 'temperature', 'top_p']);
    expect(openaiRequestBody({ mode: 'completion', prompt: 'Once', sampling }, 'm')).toEqual({ path: '/v1/completions', body: { model: 'm', prompt: 'Once', temperature: 0.2, top_p: 0.9, max_tokens: 64 } });
  });
});
