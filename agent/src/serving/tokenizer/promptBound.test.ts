import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { qwenTokenizer, qwenTokenizerDir } from '../testing/qwenTokenizer.js';
import { codePointsBeyond, countCodePoints, maxCharsPerToken } from './promptBound.js';

const qwenJson = JSON.parse(readFileSync(join(qwenTokenizerDir(), 'tokenizer.json'), 'utf8')) as object;

describe('maxCharsPerToken', () => {
  it('Qwen3 (byte-level BPE, NFC): the longest entry is 128 bytes, times 1.5 for NFC composition', () => {
    expect(maxCharsPerToken(qwenJson)).toBe(192);
  });

  it('holds for real text: no prompt has fewer tokens than its characters / the bound', async () => {
    const tok = await qwenTokenizer();
    const bound = tok.maxCharsPerToken!;
    const texts = [' '.repeat(5000), '='.repeat(3000), 'Hello, world. '.repeat(200), 'e\u0301'.repeat(500), 'u\u0308\u0304'.repeat(400), '世界'.repeat(300), '😀'.repeat(100)];
    for (const t of texts) expect(tok.encode(t, false).length, JSON.stringify(t.slice(0, 8))).toBeGreaterThanOrEqual(Math.ceil(countCodePoints(t) / bound));
  });

  it('gives no bound when normalisation or pre-tokenisation may delete text', () => {
    const base = { model: { type: 'BPE', vocab: { a: 0, abc: 1 } }, pre_tokenizer: null, normalizer: null };
    expect(maxCharsPerToken(base)).toBe(3);
    expect(maxCharsPerToken({ ...base, normalizer: { type: 'NFKC' } })).toBe(5);
    expect(maxCharsPerToken({ ...base, normalizer: { type: 'Sequence', normalizers: [{ type: 'NFD' }, { type: 'Lowercase' }] } })).toBe(3);
    expect(maxCharsPerToken({ ...base, normalizer: { type: 'Strip' } })).toBeNull();
    expect(maxCharsPerToken({ ...base, normalizer: { type: 'Sequence', normalizers: [{ type: 'NFC' }, { type: 'Replace' }] } })).toBeNull();
    expect(maxCharsPerToken({ ...base, pre_tokenizer: { type: 'WhitespaceSplit' } })).toBeNull();
    expect(maxCharsPerToken({ ...base, pre_tokenizer: { type: 'Split', behavior: 'Removed' } })).toBeNull();
    expect(maxCharsPerToken({ ...base, pre_tokenizer: { type: 'Metaspace' } })).toBe(3);
    // Unigram vocabularies are [piece, score] pairs; added tokens count too.
    expect(maxCharsPerToken({ model: { type: 'Unigram', vocab: [['▁hello', -1], ['x', -2]] }, added_tokens: [{ content: '<|longer_special|>' }] })).toBe(18);
    expect(maxCharsPerToken({ model: { type: 'BPE', vocab: {} } })).toBeNull();
  });
});

describe('code points', () => {
  it('counts surrogate pairs once and stops counting when the answer is clear', () => {
    expect(countCodePoints('a😀b')).toBe(3);
    expect(codePointsBeyond(['abc', 'de'], 5)).toBeNull();
    expect(codePointsBeyond(['abc', 'def'], 5)).toBe(6);
    expect(codePointsBeyond(['😀😀😀'], 4)).toBeNull(); // 6 UTF-16 units, 3 code points
    expect(codePointsBeyond(['x'.repeat(100)], 10)).toBe(50); // at least half the units: no scan
  });
});
