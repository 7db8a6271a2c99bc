/**
 * The vocabulary handed to xgrammar: token strings by id, special tokens blanked, and the
 * vocabulary type and prefix space read from tokenizer.json (Qwen3's real file, the DeepSeek
 * test tokenizer, and SentencePiece-shaped ones).
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { deepseekSpecialTokens, writeDeepseekTokenizer } from '../testing/deepseekTokenizer.js';
import { qwenTokenizerDir } from '../testing/qwenTokenizer.js';
import { grammarVocabOf, prependsSpace, vocabTypeOf } from './vocab.js';

const read = (dir: string): Record<string, unknown> => JSON.parse(readFileSync(join(dir, 'tokenizer.json'), 'utf8')) as Record<string, unknown>;

describe('grammarVocabOf', () => {
  it('Qwen3: byte-level, no prefix space, every id listed, special added tokens blank, others kept', () => {
    const v = grammarVocabOf(read(qwenTokenizerDir()));
    expect(v).toMatchObject({ vocabType: 'byte_level', prependSpace: false });
    expect(v.tokens).toHaveLength(151_669);
    expect(v.tokens[9707]).toBe('Hello');
    expect(v.tokens[1879]).toBe('Ġworld');
    expect(v.tokens[151_645]).toBe(''); // <|im_end|> (special)
    expect(v.tokens[151_667]).toBe('<think>'); // not special: plain text
  });

  it('the DeepSeek test tokenizer: byte-level, its full-width-bar specials blank', () => {
    const dir = mkdtempSync(join(tmpdir(), 'afd-ds-vocab-'));
    try {
      writeDeepseekTokenizer(dir);
      const v = grammarVocabOf(read(dir));
      expect(v.vocabType).toBe('byte_level');
      expect(v.tokens.slice(0, deepseekSpecialTokens.length).every((t) => t === '')).toBe(true);
      expect(v.tokens).toContain('Ġworld');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('SentencePiece shapes: ByteFallback decoders, "▁" prepended by the normaliser or a Metaspace pre-tokenizer', () => {
    const llama2 = {
      normalizer: { type: 'Sequence', normalizers: [{ type: 'Prepend', prepend: '▁' }, { type: 'Replace', pattern: { String: ' ' }, content: '▁' }] },
      decoder: { type: 'Sequence', decoders: [{ type: 'Replace' }, { type: 'ByteFallback' }, { type: 'Fuse' }, { type: 'Strip', content: ' ', start: 1, stop: 0 }] },
    };
    expect([vocabTypeOf(llama2), prependsSpace(llama2)]).toEqual(['byte_fallback', true]);
    const metaspace = (scheme: string): Record<string, unknown> => ({ pre_tokenizer: { type: 'Metaspace', replacement: '▁', prepend_scheme: scheme }, decoder: { type: 'Metaspace' } });
    expect([vocabTypeOf(metaspace('first')), prependsSpace(metaspace('first'))]).toEqual(['raw', true]);
    expect(prependsSpace(metaspace('never'))).toBe(false);
    expect(vocabTypeOf({})).toBe('raw');
    const unigram = grammarVocabOf({ model: { type: 'Unigram', vocab: [['<unk>', 0], ['▁a', -1]] }, added_tokens: [{ id: 0, content: '<unk>', special: true }] });
    expect(unigram.tokens).toEqual(['', '▁a']);
    expect(() => grammarVocabOf({ model: {} })).toThrow(/no model.vocab/);
  });
});
