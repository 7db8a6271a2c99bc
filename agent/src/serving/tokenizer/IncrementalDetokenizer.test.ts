import { describe, expect, it } from 'vitest';
import { IncrementalDetokenizer } from './IncrementalDetokenizer.js';
import { qwenTokenizer } from '../testing/qwenTokenizer.js';

const tok = await qwenTokenizer();

/** Ids of the single-byte tokens of a string's UTF-8 bytes (byte-level BPE alphabet). */
function byteTokens(s: string): number[] {
  const bytes = [...Buffer.from(s, 'utf8')];
  // GPT-2 byte-to-unicode table: printable latin-1 bytes map to themselves, others to 256+n.
  const printable = (b: number): boolean => (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
  const table = new Map<number, string>();
  let n = 0;
  for (let b = 0; b < 256; b++) table.set(b, printable(b) ? String.fromCharCode(b) : String.fromCharCode(256 + n++));
  return bytes.map((b) => {
    const id = tok.tokenId(table.get(b)!);
    if (id === undefined) throw new Error(`no byte token for ${b}`);
    return id;
  });
}

function hasLoneSurrogateOrReplacement(s: string): boolean {
  return s.includes('\uFFFD') || /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/.test(s);
}

describe('IncrementalDetokenizer', () => {
  it('reassembles multi-byte characters split over byte tokens without emitting U+FFFD', () => {
    const text = 'a世界😀é!';
    const ids = byteTokens(text);
    expect(ids.length).toBe(Buffer.byteLength(text));
    const d = new IncrementalDetokenizer(tok);
    const deltas: string[] = [];
    for (const id of ids) deltas.push(d.push(id));
    deltas.push(d.flush());
    for (const delta of deltas) expect(hasLoneSurrogateOrReplacement(delta)).toBe(false);
    expect(deltas.join('')).toBe(text);
    // The 4-byte emoji is held for three tokens, then released whole.
    expect(deltas.filter((x) => x === '😀')).toHaveLength(1);
  });

  it('matches a full decode for ordinary tokens, using prompt context for spaces', () => {
    const prompt = tok.encode('The answer is');
    const out = tok.encode(' forty two, 世界 and 😀 done.', false);
    const d = new IncrementalDetokenizer(tok, prompt);
    const text = out.map((id) => d.push(id)).join('') + d.flush();
    expect(text).toBe(tok.decode(out));
    expect(d.text).toBe(text);
  });

  it('flushes bytes that never form a character as U+FFFD (valid text)', () => {
    const ids = byteTokens('😀').slice(0, 2);
    const d = new IncrementalDetokenizer(tok);
    expect(d.push(ids[0]!)).toBe('');
    expect(d.push(ids[1]!)).toBe('');
    expect(d.flush()).toMatch(/^\uFFFD+$/);
  });

  it('skip_special_tokens false keeps special tokens; spaces_between_special_tokens false emits consecutive added tokens raw', () => {
    const ids = [151_644, ...tok.encode('user', false), 151_645, 151_645]; // <|im_start|>user<|im_end|><|im_end|>
    const decode = (opts: { skipSpecialTokens: boolean; spacesBetweenSpecialTokens: boolean }, decoder = tok): string => {
      const d = new IncrementalDetokenizer(decoder, [], opts);
      return ids.map((id) => d.push(id)).join('') + d.flush();
    };
    expect(decode({ skipSpecialTokens: true, spacesBetweenSpecialTokens: true })).toBe('user');
    expect(decode({ skipSpecialTokens: false, spacesBetweenSpecialTokens: true })).toBe('<|im_start|>user<|im_end|><|im_end|>');
    // A decoder that puts a space before every added token (as Metaspace/WordPiece ones do):
    // with spaces_between_special_tokens false, an added token right after another comes raw.
    const spaced = {
      decode: (xs: readonly number[], skip?: boolean): string => xs.map((x) => (tok.addedTokenContent(x) !== undefined ? ` ${tok.decode([x], skip)}` : tok.decode([x], skip))).join(''),
      addedTokenContent: (x: number) => tok.addedTokenContent(x),
    };
    expect(decode({ skipSpecialTokens: false, spacesBetweenSpecialTokens: true }, spaced as never)).toBe(' <|im_start|>user <|im_end|> <|im_end|>');
    expect(decode({ skipSpecialTokens: false, spacesBetweenSpecialTokens: false }, spaced as never)).toBe(' <|im_start|>user <|im_end|><|im_end|>');
  });

  it("a token's own string (logprobs) is its text alone, special tokens included", () => {
    expect(tok.tokenString(151_645)).toBe('<|im_end|>');
    expect(tok.tokenString(tok.encode(' world', false)[0]!)).toBe(' world');
    expect(tok.addedTokenContent(151_645)).toBe('<|im_end|>');
    expect(tok.addedTokenContent(tok.encode(' world', false)[0]!)).toBeUndefined();
  });
});
