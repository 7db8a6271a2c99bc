import { describe, expect, it } from 'vitest';
import { openaiRequestBody } from './openaiRequestBody.js';

const sampling = { temperature: 0.2, topP: 0.9, topK: 0, maxTokens: 64, seed: null, minP: 0, presencePenalty: 0, frequencyPenalty: 0, repetitionPenalty: 1, stop: [], topLogprobs: null };

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

  it('sends min_p, the penalties and stop only when not the API default', () => {
    const set = { ...sampling, minP: 0.05, presencePenalty: 0.5, frequencyPenalty: -0.25, repetitionPenalty: 1.1, stop: ['END', '\n\n'] };
    const r = openaiRequestBody({ mode: 'chat', messages: [{ role: 'user', content: 'hi' }], sampling: set }, 'm');
    expect(r.body).toMatchObject({ min_p: 0.05, presence_penalty: 0.5, frequency_penalty: -0.25, repetition_penalty: 1.1, stop: ['END', '\n\n'] });
    const c = openaiRequestBody({ mode: 'completion', prompt: 'Once', sampling: set }, 'm');
    expect(c.body).toMatchObject({ min_p: 0.05, presence_penalty: 0.5, frequency_penalty: -0.25, repetition_penalty: 1.1, stop: ['END', '\n\n'] });
    const plain = openaiRequestBody({ mode: 'chat', messages: [{ role: 'user', content: 'hi' }], sampling }, 'm').body;
    for (const k of ['min_p', 'presence_penalty', 'frequency_penalty', 'repetition_penalty', 'stop', 'logprobs', 'top_logprobs']) expect(plain).not.toHaveProperty(k);
  });

  it('the token view asks for logprobs: chat logprobs true with top_logprobs, completions logprobs k', () => {
    const k5 = { ...sampling, topLogprobs: 5 };
    expect(openaiRequestBody({ mode: 'chat', messages: [{ role: 'user', content: 'hi' }], sampling: k5 }, 'm').body).toMatchObject({ logprobs: true, top_logprobs: 5 });
    const c = openaiRequestBody({ mode: 'completion', prompt: 'Once', sampling: k5 }, 'm').body;
    expect(c).toMatchObject({ logprobs: 5 });
    expect(c).not.toHaveProperty('top_logprobs');
    expect(openaiRequestBody({ mode: 'chat', messages: [{ role: 'user', content: 'hi' }], sampling: { ...sampling, topLogprobs: 0 } }, 'm').body).toMatchObject({ logprobs: true, top_logprobs: 0 });
  });

  it("continuing a chat reply sends vLLM's continue_final_message and add_generation_prompt as given", () => {
    const messages = [
      { role: 'user' as const, content: 'Tell me a story' },
      { role: 'assistant' as const, content: 'Once upon a' },
    ];
    const r = openaiRequestBody({ mode: 'chat', messages, sampling, continue_final_message: true, add_generation_prompt: false }, 'm');
    expect(r.body).toMatchObject({ messages, continue_final_message: true, add_generation_prompt: false });
  });
});
