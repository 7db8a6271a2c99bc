import { describe, expect, it } from 'vitest';
import { foldToolCallFragments, prettyArguments, toolCallFragments, type StreamedToolCall } from './toolCallStream.js';

/** The delta.tool_calls of each chunk of a streamed reply that calls two functions, as OpenAI sends them. */
const CHUNKS: unknown[] = [
  [{ index: 0, id: 'call_a', type: 'function', function: { name: 'get_weather', arguments: '' } }],
  [{ index: 0, function: { arguments: '{"ci' } }],
  [{ index: 0, id: null, type: null, function: { name: null, arguments: 'ty": "Pa' } }],
  [{ index: 0, function: { arguments: 'ris"}' } }],
  [{ index: 1, id: 'call_b', type: 'function', function: { name: 'get_time', arguments: '{"timezone": ' } }],
  [{ index: 1, function: { arguments: '"Europe/Paris"}' } }],
];

function fold(chunks: unknown[]): StreamedToolCall[] {
  return chunks.reduce<StreamedToolCall[]>((calls, raw) => foldToolCallFragments(calls, toolCallFragments(raw)), []);
}

describe('toolCallFragments', () => {
  it('keeps index, id, type, name and arguments, and drops nulls and entries without an index', () => {
    expect(toolCallFragments(CHUNKS[0])).toEqual([{ index: 0, id: 'call_a', type: 'function', function: { name: 'get_weather', arguments: '' } }]);
    expect(toolCallFragments(CHUNKS[2])).toEqual([{ index: 0, function: { arguments: 'ty": "Pa' } }]);
    expect(toolCallFragments([{ id: 'x' }, { index: -1 }, { index: 1.5 }, null, 'x', { index: 2, function: null }])).toEqual([{ index: 2 }]);
    expect(toolCallFragments(undefined)).toEqual([]);
    expect(toolCallFragments(null)).toEqual([]);
  });
});

describe('foldToolCallFragments', () => {
  it('joins a streamed reply into whole calls, in index order', () => {
    expect(fold(CHUNKS)).toEqual([
      { index: 0, id: 'call_a', name: 'get_weather', arguments: '{"city": "Paris"}' },
      { index: 1, id: 'call_b', name: 'get_time', arguments: '{"timezone": "Europe/Paris"}' },
    ]);
  });

  it('shows a call while it streams: the arguments so far', () => {
    expect(fold(CHUNKS.slice(0, 3))).toEqual([{ index: 0, id: 'call_a', name: 'get_weather', arguments: '{"city": "Pa' }]);
  });

  it('joins parallel calls whose fragments interleave, and a repeated id or name changes nothing', () => {
    const calls = fold([
      [
        { index: 1, id: 'call_2', function: { name: 'get_time', arguments: '{"timezone":' } },
        { index: 0, id: 'call_1', function: { name: 'get_weather', arguments: '{"city":' } },
      ],
      [{ index: 0, id: 'call_1', function: { name: 'get_weather', arguments: '"Oslo"}' } }],
      [{ index: 1, function: { arguments: '"UTC"}' } }],
    ]);
    expect(calls).toEqual([
      { index: 0, id: 'call_1', name: 'get_weather', arguments: '{"city":"Oslo"}' },
      { index: 1, id: 'call_2', name: 'get_time', arguments: '{"timezone":"UTC"}' },
    ]);
  });

  it('does not change the calls it is given', () => {
    const before = fold(CHUNKS.slice(0, 1));
    const copy = structuredClone(before);
    foldToolCallFragments(before, [{ index: 0, function: { arguments: '{}' } }, { index: 3, id: 'z' }]);
    expect(before).toEqual(copy);
  });
});

describe('prettyArguments', () => {
  it('pretty-prints whole JSON and leaves a partial or non-JSON text as it is', () => {
    expect(prettyArguments('{"city":"Paris","days":[1,2]}')).toBe('{\n  "city": "Paris",\n  "days": [\n    1,\n    2\n  ]\n}');
    expect(prettyArguments('{"city": "Pa')).toBe('{"city": "Pa');
    expect(prettyArguments('   ')).toBe('');
  });
});
