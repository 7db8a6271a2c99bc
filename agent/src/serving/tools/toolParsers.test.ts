/**
 * The tool-call parsers on outputs in each family's format: several calls, text around
 * them, malformed markup falling back to content, and the streaming contract: fed the
 * same text in any split (every two-piece split, and character by character), the
 * reassembled deltas equal the whole-text parse, no content delta carries markup, and a
 * call's first delta has its id and name.
 */
import { describe, expect, it } from 'vitest';
import { deepseekV3Parser } from './deepseekV3Parser.js';
import { namedCallParser, requiredCallsParser } from './forcedToolParsers.js';
import { hermesParser } from './hermesParser.js';
import { llama3JsonParser } from './llama3JsonParser.js';
import { collectDeltas, firstCallOnly, newToolCallId, type ParsedToolOutput, type ToolParser, type ToolStreamDelta } from './toolCalls.js';
import { detectToolParser, resolveToolParser } from './toolParsers.js';

/** Streams `chunks` through a fresh stream of the parser; the deltas, ids numbered. */
function streamed(parser: ToolParser, chunks: readonly string[]): ToolStreamDelta[] {
  let n = 0;
  const s = parser.stream({ newId: () => `id${n++}` });
  return [...chunks.map((c) => s.push(c)), s.finish()];
}

/** Every two-piece split and the one-character split give parse()'s output; returns it. */
function splitsAgree(parser: ToolParser, text: string, markup: readonly string[] = []): ParsedToolOutput {
  const whole = parser.parse(text);
  const splits = [[...text], ...Array.from({ length: text.length + 1 }, (_, k) => [text.slice(0, k), text.slice(k)])];
  for (const chunks of splits) {
    const deltas = streamed(parser, chunks);
    expect(collectDeltas(deltas), `split ${JSON.stringify(chunks.slice(0, 3))}`).toEqual(whole);
    if (whole.toolCalls.length === 0) continue;
    for (const d of deltas) for (const tag of markup) expect(d.content ?? '').not.toContain(tag);
    const firsts = new Map<number, { id?: string; name?: string }>();
    for (const d of deltas) for (const t of d.toolCalls ?? []) if (!firsts.has(t.index)) firsts.set(t.index, t);
    for (const [i, t] of firsts) expect(t, `call ${i}'s first delta`).toMatchObject({ id: `id${i}`, name: whole.toolCalls[i]!.name });
  }
  return whole;
}

const call = (name: string, args: string) => ({ name, arguments: args });

describe('hermes', () => {
  const markup = ['<tool_call>', '</tool_call>', '<tool_', '</tool'];

  it('reads several calls, the text before them as content, whitespace next to them dropped', () => {
    const text = 'Let me check.\n\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris", "unit": "c"}}\n</tool_call>\n<tool_call>\n{"arguments": {"q": "a \\"b\\" }"}, "name": "search"}\n</tool_call>\n';
    expect(splitsAgree(hermesParser, text, markup)).toEqual({
      content: 'Let me check.',
      toolCalls: [call('get_weather', '{"city": "Paris", "unit": "c"}'), call('search', '{"q": "a \\"b\\" }"}')],
    });
  });

  it('content null when there is only calls; missing arguments are {}; text after the calls is content', () => {
    expect(splitsAgree(hermesParser, '<tool_call>\n{"name": "now"}\n</tool_call>', markup)).toEqual({ content: null, toolCalls: [call('now', '{}')] });
    expect(splitsAgree(hermesParser, '<tool_call>{"name": "f", "arguments": {}}</tool_call>\n\nDone.', markup)).toEqual({ content: 'Done.', toolCalls: [call('f', '{}')] });
  });

  it('a call without </tool_call> ends at the next <tool_call> or the output\'s end; Qwen3 thinking stays content', () => {
    const text = '<think>\nuse tools\n</think>\n\n<tool_call>\n{"name": "a", "arguments": {"x": [1, 2.5e3, true, null]}}\n<tool_call>\n{"name": "b", "arguments": {"y": "世界"}}';
    expect(splitsAgree(hermesParser, text, markup)).toEqual({ content: '<think>\nuse tools\n</think>', toolCalls: [call('a', '{"x": [1, 2.5e3, true, null]}'), call('b', '{"y": "世界"}')] });
  });

  it('malformed markup is content as written: not JSON, no name, an array, an unclosed tag at the end', () => {
    for (const text of ['<tool_call>\nnot json\n</tool_call>', 'x <tool_call>{"arguments": {}}</tool_call>', '<tool_call>[1]</tool_call>', 'a < b and <tool_', 'tail <tool_call>\n{"na', 'no calls at all  \n']) {
      expect(splitsAgree(hermesParser, text)).toEqual({ content: text, toolCalls: [] });
    }
  });

  it('a call broken after its name keeps what was streamed and drops the rest of its block', () => {
    expect(splitsAgree(hermesParser, '<tool_call>{"name": "f", "arguments": {"a": 1}} oops</tool_call>ok', markup)).toEqual({ content: 'ok', toolCalls: [call('f', '{"a": 1}')] });
    expect(splitsAgree(hermesParser, '<tool_call>{"name": "f", "arguments": {"a": tru}}</tool_call>', markup)).toEqual({ content: null, toolCalls: [call('f', '{"a": tru')] });
  });
});

describe('deepseek_v3', () => {
  const B = '<｜tool▁calls▁begin｜>';
  const E = '<｜tool▁calls▁end｜>';
  const cb = '<｜tool▁call▁begin｜>';
  const ce = '<｜tool▁call▁end｜>';
  const sep = '<｜tool▁sep｜>';
  const markup = [B, E, cb, ce, sep, '<｜tool'];

  it('reads the calls block as vLLM\'s deepseek_v3 format writes it', () => {
    const text = `I will look.${B}${cb}function${sep}get_weather\n\`\`\`json\n{"city": "Beijing"}\n\`\`\`${ce}\n${cb}function${sep}get_time\n\`\`\`json\n{"tz": "Asia/Shanghai", "list": [1, {"a": "\`"}]}\n\`\`\`${ce}${E}`;
    expect(splitsAgree(deepseekV3Parser, text, markup)).toEqual({
      content: 'I will look.',
      toolCalls: [call('get_weather', '{"city": "Beijing"}'), call('get_time', '{"tz": "Asia/Shanghai", "list": [1, {"a": "`"}]}')],
    });
  });

  it('content null with only calls; arguments without a fence are taken as they are; text after the block is content', () => {
    expect(splitsAgree(deepseekV3Parser, `${B}${cb}function${sep}f\n{"a": 1}${ce}${E}\nthen`, markup)).toEqual({ content: 'then', toolCalls: [call('f', '{"a": 1}')] });
  });

  it('a block whose first call is broken is content as written; a later broken call is dropped', () => {
    for (const text of [`${B}${cb}no separator here\n${ce}${E}`, `${B}oops`, `x${B}${cb}function${sep}`, `${B}${E}`]) {
      expect(splitsAgree(deepseekV3Parser, text)).toEqual({ content: text, toolCalls: [] });
    }
    const text = `${B}${cb}function${sep}f\n\`\`\`json\n{}\n\`\`\`${ce}${cb}bad${ce}${cb}function${sep}h<${ce}${cb}function${sep}g\n\`\`\`json\n{"b": 2}\n\`\`\`${ce}${E}`;
    expect(splitsAgree(deepseekV3Parser, text, markup)).toEqual({ content: null, toolCalls: [call('f', '{}'), call('g', '{"b": 2}')] });
  });
});

describe('llama3_json', () => {
  it('reads calls after <|python_tag|> or a leading "{", several separated by ";", "parameters" or "arguments"', () => {
    expect(splitsAgree(llama3JsonParser, '<|python_tag|>{"name": "get_weather", "parameters": {"city": "Paris"}}; {"name": "now", "arguments": {}}', ['<|python_tag|>'])).toEqual({
      content: null,
      toolCalls: [call('get_weather', '{"city": "Paris"}'), call('now', '{}')],
    });
    expect(splitsAgree(llama3JsonParser, '  {"name": "f", "parameters": {"n": -1.5}}\n\nCalled f.')).toEqual({ content: 'Called f.', toolCalls: [call('f', '{"n": -1.5}')] });
  });

  it('anything else is content as written: prose, JSON that is no call, python_tag code', () => {
    for (const text of ['The answer is {"a": 1}', '{"answer": 42}', '<|python_tag|>brave_search.call(query="x")', ' \n', '<|python']) {
      expect(splitsAgree(llama3JsonParser, text)).toEqual({ content: text, toolCalls: [] });
    }
  });

  it('a call cut after its name keeps its name and the arguments so far', () => {
    expect(splitsAgree(llama3JsonParser, '{"name": "f"')).toEqual({ content: null, toolCalls: [call('f', '')] });
    expect(splitsAgree(llama3JsonParser, '{"name": "f", "parameters": {"a": [1')).toEqual({ content: null, toolCalls: [call('f', '{"a": [1')] });
  });

  it('an object after ";" that is no call ends the calls: it and the rest are content', () => {
    expect(splitsAgree(llama3JsonParser, '{"name": "f", "parameters": {}}; {"x": 1} and more')).toEqual({ content: '; {"x": 1} and more', toolCalls: [call('f', '{}')] });
  });
});

describe('forced outputs (tool_choice required / named)', () => {
  it('required: one call per array item, parameters as written', () => {
    const text = '[{"name": "a", "parameters": {"x": "]}"}}, {"parameters": {}, "name": "b"}]';
    expect(splitsAgree(requiredCallsParser, text)).toEqual({ content: null, toolCalls: [call('a', '{"x": "]}"}'), call('b', '{}')] });
    expect(splitsAgree(requiredCallsParser, '[{"name": "a", "parameters": {"x": 1')).toEqual({ content: null, toolCalls: [call('a', '{"x": 1')] });
  });

  it('required: an output with no named call is content', () => {
    for (const text of ['[', 'oops', '[{"parameters": {}}]', '[]']) expect(splitsAgree(requiredCallsParser, text)).toEqual({ content: text, toolCalls: [] });
  });

  it('named: the whole output is the arguments of the one call', () => {
    const named = namedCallParser('get_weather');
    expect(splitsAgree(named, '{"city": "Paris"}')).toEqual({ content: null, toolCalls: [call('get_weather', '{"city": "Paris"}')] });
    expect(named.parse('')).toEqual({ content: null, toolCalls: [call('get_weather', '')] });
  });
});

describe('parallel_tool_calls false, ids, the choice of parser', () => {
  it('firstCallOnly keeps the first call and the content', () => {
    const text = 'hi <tool_call>{"name": "a", "arguments": {}}</tool_call><tool_call>{"name": "b", "arguments": {}}</tool_call>';
    expect(splitsAgree(firstCallOnly(hermesParser), text)).toEqual({ content: 'hi', toolCalls: [call('a', '{}')] });
  });

  it('call ids are OpenAI-style and distinct', () => {
    const ids = new Set(Array.from({ length: 100 }, newToolCallId));
    expect(ids.size).toBe(100);
    for (const id of ids) expect(id).toMatch(/^call_[A-Za-z0-9]{24}$/);
  });

  it('auto picks the parser from the template\'s markup; a set parser wins', () => {
    expect(detectToolParser('... <tool_call>\\n{"name": ...')).toBe('hermes');
    expect(detectToolParser("{{'<｜Assistant｜><｜tool▁calls▁begin｜>'}}")).toBe('deepseek_v3');
    expect(detectToolParser('{{- "<|python_tag|>" + tool_call.name }}')).toBe('llama3_json');
    expect(detectToolParser('<|start_header_id|>ipython<|end_header_id|>')).toBe('llama3_json');
    expect(detectToolParser('{{ messages }}')).toBeNull();
    expect(resolveToolParser('auto', null)).toBeNull();
    expect(resolveToolParser('llama3_json', '<tool_call>')).toBe('llama3_json');
  });
});
