/**
 * The stream events and output items a tool-call parser's results become: the plumbing
 * the route uses once a parser is connected, fed here with parsed calls and call deltas
 * as a parser would produce them.
 */
import { describe, expect, it } from 'vitest';
import { ApiError } from '../ApiError.js';
import { ResponseEvents, type ResponseEvent } from './ResponseEvents.js';
import { outputItems, responseUsage, type ResponseShell } from './responseOutput.js';

const shell: ResponseShell = { id: 'resp_1', object: 'response' };
const usage = responseUsage({ prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 });
const types = (events: ResponseEvent[]): string[] => events.map((e) => e.type);

/** Runs a stream of parser deltas through ResponseEvents; returns every event. */
function run(deltas: Parameters<ResponseEvents['push']>[0][], o: { parallel?: boolean; status?: 'completed' | 'incomplete' } = {}): ResponseEvent[] {
  const ev = new ResponseEvents(shell, o.parallel ?? true);
  return [...ev.start(), ...deltas.flatMap((d) => ev.push(d)), ...ev.finish(o.status ?? 'completed', usage)];
}

const finalResponse = (events: ResponseEvent[]): { output: Record<string, unknown>[]; status: string } => events.at(-1)!['response'] as never;

describe('ResponseEvents', () => {
  it('streams text as one message item, sequence numbers counting from 0', () => {
    const events = run([{ content: 'Hel' }, {}, { content: 'lo' }]);
    expect(types(events)).toEqual([
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.content_part.added',
      'response.output_text.delta',
      'response.output_text.delta',
      'response.output_text.done',
      'response.content_part.done',
      'response.output_item.done',
      'response.completed',
    ]);
    expect(events.map((e) => e.sequence_number)).toEqual(events.map((_, i) => i));
    expect(events[6]).toMatchObject({ text: 'Hello', output_index: 0, content_index: 0 });
    expect(finalResponse(events)).toMatchObject({ status: 'completed', output: [{ type: 'message', status: 'completed', content: [{ type: 'output_text', text: 'Hello' }] }], usage });
  });

  it('a text then two calls: the message closes, each call streams its arguments', () => {
    const events = run([
      { content: 'Checking.' },
      { content: '\n\n' },
      { toolCalls: [{ index: 0, id: 'call_a', name: 'get_weather' }] },
      { toolCalls: [{ index: 0, argumentsDelta: '{"city": ' }] },
      { toolCalls: [{ index: 0, argumentsDelta: '"Paris"}' }] },
      { content: '\n' },
      { toolCalls: [{ index: 1, id: 'call_b', name: 'get_time', argumentsDelta: '{}' }] },
    ]);
    expect(types(events).slice(2)).toEqual([
      'response.output_item.added', // message
      'response.content_part.added',
      'response.output_text.delta',
      'response.output_text.delta',
      'response.output_text.done',
      'response.content_part.done',
      'response.output_item.done',
      'response.output_item.added', // call 0
      'response.function_call_arguments.delta',
      'response.function_call_arguments.delta',
      'response.function_call_arguments.done',
      'response.output_item.done',
      'response.output_item.added', // call 1 (the whitespace between the calls is dropped)
      'response.function_call_arguments.delta',
      'response.function_call_arguments.done',
      'response.output_item.done',
      'response.completed',
    ]);
    const added = events.filter((e) => e.type === 'response.output_item.added');
    expect(added[1]).toMatchObject({ output_index: 1, item: { type: 'function_call', status: 'in_progress', call_id: 'call_a', name: 'get_weather', arguments: '' } });
    const argsDone = events.filter((e) => e.type === 'response.function_call_arguments.done');
    expect(argsDone[0]).toMatchObject({ output_index: 1, name: 'get_weather', arguments: '{"city": "Paris"}', item_id: (added[1]!['item'] as { id: string }).id });
    const out = finalResponse(events).output;
    expect(out.map((i) => i['type'])).toEqual(['message', 'function_call', 'function_call']);
    expect(out[0]).toMatchObject({ content: [{ text: 'Checking.\n\n' }] });
    expect(out[1]).toMatchObject({ call_id: 'call_a', arguments: '{"city": "Paris"}', status: 'completed' });
    expect(out[2]).toMatchObject({ call_id: 'call_b', name: 'get_time', arguments: '{}' });
    expect((out[1]!['id'] as string).startsWith('fc_')).toBe(true);
  });

  it('whitespace before a call makes no message; a call without an id gets one; text after a call is a new message', () => {
    const events = run([{ content: '\n' }, { toolCalls: [{ index: 0, name: 'f' }] }, { toolCalls: [{ index: 0, argumentsDelta: '{}' }] }, { content: 'Done.' }]);
    const out = finalResponse(events).output;
    expect(out.map((i) => i['type'])).toEqual(['function_call', 'message']);
    expect(out[0]!['call_id']).toMatch(/^call_[0-9a-f]{32}$/);
    expect(out[1]).toMatchObject({ content: [{ text: 'Done.' }] });
  });

  it('waits for a call\'s name before announcing it', () => {
    const events = run([{ toolCalls: [{ index: 0, id: 'c', argumentsDelta: '{"a"' }] }, { toolCalls: [{ index: 0, name: 'f', argumentsDelta: ': 1}' }] }]);
    const added = events.find((e) => e.type === 'response.output_item.added')!;
    expect(added['item']).toMatchObject({ name: 'f', call_id: 'c' });
    expect(events.filter((e) => e.type === 'response.function_call_arguments.delta').map((e) => e['delta'])).toEqual(['{"a": 1}']);
  });

  it('without parallel tool calls keeps the first call only', () => {
    const events = run([{ toolCalls: [{ index: 0, id: 'a', name: 'f', argumentsDelta: '{}' }] }, { toolCalls: [{ index: 1, id: 'b', name: 'g', argumentsDelta: '{}' }] }], { parallel: false });
    expect(finalResponse(events).output.map((i) => i['call_id'])).toEqual(['a']);
  });

  it('an empty output is one empty message; an incomplete one marks its items', () => {
    expect(finalResponse(run([])).output).toEqual([expect.objectContaining({ type: 'message', content: [expect.objectContaining({ text: '' })] })]);
    expect(finalResponse(run([{ content: ' ' }])).output).toEqual([expect.objectContaining({ content: [expect.objectContaining({ text: ' ' })] })]);
    const cut = run([{ toolCalls: [{ index: 0, id: 'a', name: 'f', argumentsDelta: '{"x": ' }] }], { status: 'incomplete' });
    expect(cut.at(-1)!.type).toBe('response.incomplete');
    expect(finalResponse(cut)).toMatchObject({ status: 'incomplete', incomplete_details: { reason: 'max_output_tokens' }, output: [{ type: 'function_call', status: 'incomplete', arguments: '{"x": ' }] });
  });

  it('logprobs rows go with the text they made; rows of tokens with no text yet go with the next text or the last message', () => {
    const ev = new ResponseEvents(shell, true);
    ev.start();
    const a = ev.push({}, [{ token: 'a' }]);
    const b = ev.push({ content: 'x' }, [{ token: 'b' }]);
    const eos = ev.push({}, [{ token: 'eos' }]);
    const end = ev.finish('completed', usage);
    expect(a).toEqual([]);
    expect(eos).toEqual([]);
    expect(b.find((e) => e.type === 'response.output_text.delta')!['logprobs']).toEqual([{ token: 'a' }, { token: 'b' }]);
    expect(end.find((e) => e.type === 'response.output_text.done')!['logprobs']).toEqual([{ token: 'a' }, { token: 'b' }, { token: 'eos' }]);
  });

  it('refuses a parser that sends calls out of order', () => {
    const ev = new ResponseEvents(shell, true);
    ev.push({ toolCalls: [{ index: 1, id: 'b', name: 'g' }] });
    expect(() => ev.push({ toolCalls: [{ index: 0, id: 'a', name: 'f' }] })).toThrow(/calls must stream in order/);
  });

  it('a failure is an error event, then response.failed with the output so far', () => {
    const ev = new ResponseEvents(shell, true);
    ev.start();
    ev.push({ content: 'partial' });
    const events = ev.fail(new ApiError(503, 'service_unavailable', 'stopping', 'aborted'));
    expect(events[0]).toMatchObject({ type: 'error', code: 'aborted', message: 'stopping', param: null, sequence_number: 5 });
    expect(events[1]).toMatchObject({ type: 'response.failed', response: { status: 'failed', error: { code: 'server_error', message: 'stopping' }, output: [{ status: 'in_progress', content: [{ text: 'partial' }] }] } });
  });
});

describe('outputItems (a whole output, parsed)', () => {
  const calls = [
    { id: 'call_a', name: 'f', arguments: '{"x": 1}' },
    { id: '', name: 'g', arguments: '{}' },
  ];

  it('a message for the text, then one function_call item per call', () => {
    const items = outputItems({ content: 'Let me look.', toolCalls: calls }, 'completed', [], true);
    expect(items).toMatchObject([
      { type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: 'Let me look.', annotations: [], logprobs: [] }] },
      { type: 'function_call', status: 'completed', call_id: 'call_a', name: 'f', arguments: '{"x": 1}' },
      { type: 'function_call', name: 'g', arguments: '{}' },
    ]);
    expect(items[2]!.type === 'function_call' && items[2]!.call_id).toMatch(/^call_/);
    expect(items[1]!.id).toMatch(/^fc_/);
  });

  it('no message for null or whitespace text beside calls; only the first call without parallel calls', () => {
    expect(outputItems({ content: null, toolCalls: calls }, 'completed', [], true).map((i) => i.type)).toEqual(['function_call', 'function_call']);
    expect(outputItems({ content: '\n\n', toolCalls: calls }, 'completed', [], false).map((i) => i.type)).toEqual(['function_call']);
    expect(outputItems({ content: '', toolCalls: [] }, 'incomplete', [], true)).toMatchObject([{ type: 'message', status: 'incomplete', content: [{ text: '' }] }]);
  });
});
