import { beforeAll, describe, expect, it } from 'vitest';
import { qwenTokenizer } from '../testing/qwenTokenizer.js';
import { CHUNK_CHARS, encodeBounded, nextCut, SLACK_PER_CUT, TRIGGER_CHARS_PER_TOKEN, type BoundedTokenizer } from './boundedEncode.js';
import type { TextTokenizer } from './TextTokenizer.js';

let tok: TextTokenizer;
beforeAll(async () => {
  tok = await qwenTokenizer();
});

/** The chunks encodeBounded would cut `text` into. */
function chunks(text: string, size = CHUNK_CHARS): string[] {
  const out: string[] = [];
  for (let from = 0; from < text.length; ) {
    const to = nextCut(text, from, size);
    out.push(text.slice(from, to));
    from = to;
  }
  return out;
}

/** A tokenizer that spends one token on every `per` characters, and counts its calls. */
function fake(per: number): BoundedTokenizer & { pieces: number; wholes: number } {
  const ids = (text: string): number[] => Array.from({ length: Math.ceil(text.length / per) }, () => 7);
  const t = { pieces: 0, wholes: 0, encodePiece: (s: string) => (t.pieces++, ids(s)), encode: (s: string) => (t.wholes++, ids(s)) };
  return t;
}

describe('nextCut', () => {
  it('cuts before a space between two non-spaces, else after a newline, else anywhere but inside a surrogate pair', () => {
    const words = 'a'.repeat(10) + '  b c';
    expect(nextCut(words, 0, 8)).toBe(13); // not inside "  ", before " c"
    expect(nextCut('x'.repeat(10) + '\nyyy', 0, 4)).toBe(11);
    expect(nextCut('z'.repeat(20), 0, 6)).toBe(6);
    const emoji = '😀'.repeat(10); // surrogate pairs
    expect(nextCut(emoji, 0, 5)).toBe(6);
    expect(nextCut('short', 0, 100)).toBe(5);
  });

  it('cuts the Qwen3 tokenizer where it splits anyway: the chunks tokenise to the whole text\'s tokens', () => {
    const text = 'Hello world, this is prose: numbers 12345, code `x = y + 1;`\n\tand more. '.repeat(4_000);
    const parts = chunks(text, 4_096);
    expect(parts.length).toBeGreaterThan(50);
    expect(parts.join('')).toBe(text);
    expect(parts.flatMap((p) => tok.encodePiece(p))).toEqual(tok.encode(text, false));
  });
});

describe('encodeBounded', () => {
  it('stops counting a prompt far over the limit, with a lower bound of its tokens', async () => {
    const text = 'hello world, '.repeat(60_000); // 780k characters, 180k tokens
    const limit = 4_000;
    const counted = { pieces: 0 };
    const spy: BoundedTokenizer = { encode: (t, s) => tok.encode(t, s), encodePiece: (t) => (counted.pieces++, tok.encodePiece(t)) };
    const out = await encodeBounded(spy, text, true, limit);
    expect(out).toHaveProperty('atLeast');
    const atLeast = (out as { atLeast: number }).atLeast;
    expect(atLeast).toBeGreaterThanOrEqual(limit);
    expect(atLeast).toBeLessThan(tok.encode(text.slice(0, CHUNK_CHARS * counted.pieces), false).length + 1);
    expect(counted.pieces).toBeLessThanOrEqual(Math.ceil((limit * 13) / 3 / CHUNK_CHARS) + 1); // only what the limit needed
  });

  it('tokenises whole, exactly, a text that is short for its limit or turns out to fit', async () => {
    const text = 'The quick brown fox. '.repeat(500);
    expect(await encodeBounded(tok, text, true, 100_000)).toEqual({ ids: tok.encode(text, true) });
    expect(await encodeBounded(tok, text, false, Infinity)).toEqual({ ids: tok.encode(text, false) });
    // Longer than the trigger, but 16 characters a token: counted, found to fit, tokenised whole.
    const sparse = fake(16);
    const long = 'x'.repeat(200_000);
    const out = await encodeBounded(sparse, long, true, 200_000 / TRIGGER_CHARS_PER_TOKEN - 1);
    expect(out).toEqual({ ids: sparse.encode(long, true) });
    expect(sparse.pieces).toBe(Math.ceil(200_000 / CHUNK_CHARS));
  });

  it('grants each cut its slack before refusing', async () => {
    const t = fake(1);
    const limit = 10_000;
    const out = await encodeBounded(t, 'y'.repeat(200_000), true, limit);
    // One token a character: the first chunk alone holds 32768 tokens, less the slack of the cut after it.
    expect(out).toEqual({ atLeast: CHUNK_CHARS - SLACK_PER_CUT });
    expect(t.wholes).toBe(0);
  });

  it('stops when cancelled between chunks, and pauses there', async () => {
    const t = fake(1000);
    let pauses = 0;
    const out = await encodeBounded(t, 'z'.repeat(400_000), true, 1_000, { pause: async () => void pauses++, cancelled: () => pauses >= 3 });
    expect(out).toBeNull();
    expect(pauses).toBe(3);
    expect(t.wholes).toBe(0);
  });
});
