import { describe, expect, it } from 'vitest';
import { qwenTokenizer } from '../testing/qwenTokenizer.js';
import { OutputText, type OutputTextOptions, type TokenEnd } from './OutputText.js';

const tok = await qwenTokenizer();
const EOS = 151_645; // <|im_end|>
const defaults: OutputTextOptions = { skipSpecialTokens: true, spacesBetweenSpecialTokens: true, stop: [], includeStopStrInOutput: false, minTokens: 0 };

/** Pushes ids (the last one with `end`); returns the text and whether a stop string matched. */
function run(ids: number[], over: Partial<OutputTextOptions>, end: TokenEnd = 'other'): { text: string; stopped: boolean } {
  const out = new OutputText(tok, tok.encode('Say:'), { ...defaults, ...over });
  let text = '';
  for (const [i, id] of ids.entries()) {
    const m = out.push(id, i === ids.length - 1 ? end : null);
    text += m.text;
    if (m.stopped) return { text, stopped: true };
  }
  return { text, stopped: false };
}

describe('OutputText', () => {
  const words = tok.encode(' one two STOP three', false);

  it('ends before a stop string, or after it with include_stop_str_in_output', () => {
    expect(run(words, { stop: ['STOP'] })).toEqual({ text: ' one two ', stopped: true });
    expect(run(words, { stop: ['STOP'], includeStopStrInOutput: true })).toEqual({ text: ' one two STOP', stopped: true });
  });

  it('looks for stop strings only after the first min_tokens tokens', () => {
    const n = tok.encode(' one two STOP', false).length;
    expect(run([...words, ...words], { stop: ['STOP'], minTokens: n })).toEqual({ text: ' one two STOP three one two ', stopped: true });
  });

  it("leaves a stop token's text out unless include_stop_str_in_output; special tokens show with skip_special_tokens false", () => {
    const ids = [...tok.encode(' hi', false), EOS];
    expect(run(ids, { skipSpecialTokens: false }, 'stop-token').text).toBe(' hi');
    expect(run(ids, { skipSpecialTokens: false, includeStopStrInOutput: true }, 'stop-token').text).toBe(' hi<|im_end|>');
    expect(run(ids, { skipSpecialTokens: false }, 'other').text).toBe(' hi<|im_end|>');
    expect(run(ids, {}, 'other').text).toBe(' hi');
  });
});
