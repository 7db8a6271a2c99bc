import { describe, expect, it } from 'vitest';
import { requestModel, responseFacts, streamText } from './exchangeFacts.js';

const events = (...objs: unknown[]): string => `${objs.map((o) => `data: ${JSON.stringify(o)}\n\n`).join('')}data: [DONE]\n\n`;

describe('exchangeFacts', () => {
  it('reads the model of a request body, whole or cut', () => {
    expect(requestModel('{"model":"tiny","prompt":"x"}')).toBe('tiny');
    expect(requestModel('{"model":"qwen\\"3","prompt":"xxxx\n... [5 bytes not kept] ...\nyy"}')).toBe('qwen"3');
    expect(requestModel('{"prompt":"x"}')).toBeNull();
    expect(requestModel('')).toBeNull();
  });

  it('reads usage, finish reasons and the model of a JSON response', () => {
    const body = JSON.stringify({ object: 'chat.completion', model: 'tiny', choices: [{ finish_reason: 'length' }, { finish_reason: 'stop' }], usage: { prompt_tokens: 5, completion_tokens: 9 } });
    expect(responseFacts(body, false)).toEqual({ model: 'tiny', promptTokens: 5, completionTokens: 9, finishReason: 'length,stop', error: null });
    expect(responseFacts('{"error":{"message":"missing or invalid API key"}}', false).error).toBe('missing or invalid API key');
  });

  it('reads a response cut in the middle from its head and tail', () => {
    const body = `{"model":"tiny","choices":[{"text":"aaaa\n... [900 bytes not kept] ...\naaa","finish_reason":"length"}],"usage":{"prompt_tokens":3,"completion_tokens":700}}`;
    expect(responseFacts(body, false)).toMatchObject({ model: 'tiny', promptTokens: 3, completionTokens: 700, finishReason: 'length' });
  });

  it('assembles a chat stream: text, the last usage, the finish reason', () => {
    const body = events(
      { model: 'tiny', choices: [{ delta: { role: 'assistant', content: 'Hel' }, finish_reason: null }], usage: { prompt_tokens: 4, completion_tokens: 1 } },
      { model: 'tiny', choices: [{ delta: { content: 'lo' }, finish_reason: 'stop' }], usage: { prompt_tokens: 4, completion_tokens: 2 } },
    );
    expect(responseFacts(body, true)).toEqual({ model: 'tiny', promptTokens: 4, completionTokens: 2, finishReason: 'stop', error: null });
    expect(streamText(body)).toBe('Hello');
    const completions = events({ choices: [{ text: 'a', finish_reason: null }] }, { choices: [{ text: 'b', finish_reason: 'length' }] });
    expect(responseFacts(completions, true)).toMatchObject({ finishReason: 'length', promptTokens: null });
    expect(streamText(completions)).toBe('ab');
  });

  it('reads only the last events of a long stream (usage and finish reason come last)', () => {
    const chunk = (i: number, finish: string | null) => ({ model: 'tiny', choices: [{ delta: { content: 'x' }, finish_reason: finish }], usage: { prompt_tokens: 4, completion_tokens: i + 1 } });
    const long = events(...Array.from({ length: 5000 }, (_, i) => chunk(i, i === 4999 ? 'length' : null)), { choices: [], usage: { prompt_tokens: 4, completion_tokens: 5000 } });
    const t0 = performance.now();
    expect(responseFacts(long, true)).toEqual({ model: 'tiny', promptTokens: 4, completionTokens: 5000, finishReason: 'length', error: null });
    expect(performance.now() - t0).toBeLessThan(200);
  });

  it('reads a Responses API stream and a stream the router ended with an error', () => {
    const named = (type: string, o: object): string => `event: ${type}\ndata: ${JSON.stringify({ type, ...o })}\n\n`;
    const body =
      named('response.created', { response: { object: 'response', model: 'tiny', status: 'in_progress' } }) +
      named('response.output_text.delta', { delta: 'Hi' }) +
      named('response.output_text.delta', { delta: '!' }) +
      named('response.incomplete', { response: { object: 'response', status: 'incomplete', incomplete_details: { reason: 'max_output_tokens' }, usage: { input_tokens: 7, output_tokens: 2 } } });
    expect(responseFacts(body, true)).toEqual({ model: 'tiny', promptTokens: 7, completionTokens: 2, finishReason: 'incomplete: max_output_tokens', error: null });
    expect(streamText(body)).toBe('Hi!');
    const broken = `data: ${JSON.stringify({ choices: [{ text: 'a' }] })}\n\ndata: {"error":{"message":"attention rank broke off"}}\n\ndata: [DONE]\n\n`;
    expect(responseFacts(broken, true)).toMatchObject({ error: 'attention rank broke off' });
    expect(streamText(broken)).toBe('a');
    const responsesBroken = named('response.output_text.delta', { delta: 'Hi' }) + named('error', { code: 'bad_gateway', message: 'attention rank broke off', sequence_number: 3 });
    expect(responseFacts(responsesBroken, true).error).toBe('attention rank broke off');
  });
});
