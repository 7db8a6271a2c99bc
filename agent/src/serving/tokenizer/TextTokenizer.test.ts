import { mkdtempSync, readFileSync, writeFileSync, rmSync, copyFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { TextTokenizer } from './TextTokenizer.js';
import { qwenTokenizerDir } from '../testing/qwenTokenizer.js';

const qwenDir = qwenTokenizerDir();
const tmp = mkdtempSync(join(tmpdir(), 'afd-tok-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

describe('TextTokenizer', () => {
  it('loads a model directory, round-trips text and renders the chat template', async () => {
    const tok = await TextTokenizer.fromDir(qwenDir);
    const ids = tok.encode('Hello 世界');
    expect(tok.decode(ids)).toBe('Hello 世界');
    expect(tok.eosTokenId).toBe(tok.tokenId('<|im_end|>'));
    const chat = tok.encodeChat([{ role: 'user', content: 'hi' }], { addGenerationPrompt: true });
    expect(tok.decode(chat, false)).toBe('<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n');
  });

  it('continues the final message, adds special tokens only when asked, and names token strings', async () => {
    const tok = await TextTokenizer.fromDir(qwenDir);
    const chat = [{ role: 'user', content: 'hi' }, { role: 'assistant', content: 'Once upon' }];
    const cont = tok.encodeChat(chat, { addGenerationPrompt: false, continueFinalMessage: true });
    expect(tok.decode(cont, false)).toMatch(/<\|im_start\|>assistant\n(<think>\n\n<\/think>\n\n)?Once upon$/);
    expect(() => tok.encodeChat(chat, { addGenerationPrompt: true, continueFinalMessage: true })).toThrow(/cannot both be true/);
    // A template that rewrites the final message leaves nothing to continue.
    expect(() => tok.encodeChat([{ role: 'assistant', content: '<think>x</think>' }], { addGenerationPrompt: false, continueFinalMessage: true })).toThrow(/does not appear in the rendered chat/);
    expect(tok.encodeChat(chat, { addGenerationPrompt: false, addSpecialTokens: true })).toEqual(tok.encode(tok.chatTemplate!.render(chat, { addGenerationPrompt: false }), true));
    expect([tok.vocabString(9707), tok.vocabString(1879), tok.vocabString(151_700)]).toEqual(['Hello', 'Ġworld', undefined]);
  });

  it('names the missing file and explains what is needed', async () => {
    for (let i = 0; i < 5; i += 1) {
      const err = await TextTokenizer.fromDir(tmp).then(() => null, (e: Error) => e);
      expect(err?.message).toMatch(/^cannot read \S*tokenizer\.json .*needs the HF tokenizer files/);
      expect(err?.message).toMatch(/cannot read \S*tokenizer_config\.json \(no such file\)/);
      expect(err!.message.split('needs the HF tokenizer files')).toHaveLength(2);
    }
  });

  it('rejects chat without a template, clearly', async () => {
    copyFileSync(join(qwenDir, 'tokenizer.json'), join(tmp, 'tokenizer.json'));
    const cfg = JSON.parse(readFileSync(join(qwenDir, 'tokenizer_config.json'), 'utf8'));
    delete cfg.chat_template;
    writeFileSync(join(tmp, 'tokenizer_config.json'), JSON.stringify(cfg));
    const tok = await TextTokenizer.fromDir(tmp);
    expect(tok.chatTemplate).toBeNull();
    expect(() => tok.encodeChat([{ role: 'user', content: 'x' }], { addGenerationPrompt: true })).toThrow(/no chat_template/);
  });
});
