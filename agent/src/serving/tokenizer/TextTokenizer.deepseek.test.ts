/**
 * The DeepSeek family's tokenizer shape (byte-level BPE with split pre-tokenizers,
 * full-width-bar special tokens, BOS from the post-processor) and chat-template
 * constructs load and render through our tokenizer and jinja path, with nothing
 * Qwen-specific on the way: a synthetic tokenizer (serving/testing/deepseekTokenizer.ts).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deepseekSpecialTokens, writeDeepseekTokenizer } from '../testing/deepseekTokenizer.js';
import { TextTokenizer } from './TextTokenizer.js';
import type { ChatMessage } from './ChatTemplate.js';

const dir = mkdtempSync(join(tmpdir(), 'afd-ds-tok-'));
let tok: TextTokenizer;
beforeAll(async () => {
  writeDeepseekTokenizer(dir);
  tok = await TextTokenizer.fromDir(dir);
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const id = (t: string): number => deepseekSpecialTokens.indexOf(t as (typeof deepseekSpecialTokens)[number]);

describe('a DeepSeek-style tokenizer', () => {
  it('encodes with BOS from the post-processor, merges BPE pairs, and round-trips text (digits, CJK, punctuation)', () => {
    const ids = tok.encode('Hello world');
    expect(ids[0]).toBe(id('<｜begin▁of▁sentence｜>'));
    expect(ids.slice(1)).toEqual([tok.tokenId('Hello'), tok.tokenId('Ġworld')]);
    for (const text of ['Hello world', 'x = 12345; y = "中文"!\n\ttab', 'ü é ß — …']) {
      const enc = tok.encode(text, false);
      expect(enc).not.toContain(0);
      expect(tok.decode(enc)).toBe(text);
    }
    expect(tok.decode(tok.encode('Hello'))).toBe('Hello'); // BOS skipped as special
    expect(tok.eosTokenId).toBe(id('<｜end▁of▁sentence｜>'));
  });

  it('renders the chat template: system prompts gathered, </think> stripped, one id per special token', () => {
    const messages: ChatMessage[] = [
      { role: 'system', content: 'Be brief.' },
      { role: 'system', content: 'Be kind.' },
      { role: 'user', content: 'Hi' },
      { role: 'assistant', content: 'thinking...</think>Hello' },
      { role: 'user', content: '1+1?' },
    ];
    const ids = tok.encodeChat(messages, { addGenerationPrompt: true });
    const want = '<｜begin▁of▁sentence｜>Be brief.\n\nBe kind.<｜User｜>Hi<｜Assistant｜>Hello<｜end▁of▁sentence｜><｜User｜>1+1?<｜Assistant｜>';
    expect(tok.decode(ids, false)).toBe(want);
    for (const t of ['<｜User｜>', '<｜Assistant｜>', '<｜end▁of▁sentence｜>']) expect(ids).toContain(id(t));
    expect(ids.filter((i) => i === id('<｜begin▁of▁sentence｜>'))).toHaveLength(1);
    expect(tok.decode(tok.encodeChat(messages, { addGenerationPrompt: false }), false)).toBe(want.slice(0, -'<｜Assistant｜>'.length));
  });

  it('renders tool calls and tool outputs (namespace flags, nested lookups, `in` / `is none`)', () => {
    const call = { type: 'function', function: { name: 'get_time', arguments: '{"tz":"UTC"}' } };
    const messages = [
      { role: 'user', content: 'time?' },
      { role: 'assistant', content: null, tool_calls: [call] },
      { role: 'tool', content: '12:00' },
    ] as unknown as ChatMessage[];
    const text = tok.decode(tok.encodeChat(messages, { addGenerationPrompt: true }), false);
    expect(text).toBe(
      '<｜begin▁of▁sentence｜><｜User｜>time?<｜Assistant｜><｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_time\n```json\n{"tz":"UTC"}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜><｜end▁of▁sentence｜>' +
        '<｜tool▁outputs▁begin｜><｜tool▁output▁begin｜>12:00<｜tool▁output▁end｜><｜tool▁outputs▁end｜>',
    );
  });
});
