/**
 * The grammar service's workers: another tokenizer family (the DeepSeek test tokenizer, a
 * byte-level vocabulary with full-width-bar special tokens), what happens to live matchers
 * when xgrammar aborts in the match worker (they are lost, with why; the worker restarts and
 * new requests work), a model directory without a tokenizer, and the bundle carrying xgrammar
 * itself (the workers run a bundle in a temp folder, with no node_modules to fall back on).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agentScript } from '../../testing/agentBundle.js';
import { writeDeepseekTokenizer } from '../testing/deepseekTokenizer.js';
import { qwenTokenizerDir } from '../testing/qwenTokenizer.js';
import { TextTokenizer } from '../tokenizer/TextTokenizer.js';
import type { GrammarWorkerClient } from './GrammarWorkerClient.js';
import { GrammarService } from './GrammarService.js';
import { walkGrammar } from './testing/grammarWalk.js';

const dsDir = mkdtempSync(join(tmpdir(), 'afd-ds-grammar-'));
let script: string;
beforeAll(async () => {
  writeDeepseekTokenizer(dsDir);
  script = await agentScript();
}, 120_000);
afterAll(() => rmSync(dsDir, { recursive: true, force: true }));

describe('GrammarService workers', () => {
  it('the DeepSeek test tokenizer: walks decode to what the spec accepts', async () => {
    const tok = await TextTokenizer.fromDir(dsDir);
    const eos = tok.eosTokenId!;
    const vocabSize = 300; // the LM head may be wider than the tokenizer's 278 tokens
    const service = new GrammarService({ script, modelDir: dsDir, vocabSize, stopTokenIds: [eos] });
    try {
      const closers = new Set<number>();
      for (let id = 0; id < 278; id++) if (/["}\]]/.test(tok.vocabString(id) ?? '')) closers.add(id);
      const choice = await service.compile({ type: 'choice', choices: ['Hello world', 'Hi "you"'], param: 'guided_choice' });
      const json = await service.compile({ type: 'json_schema', schema: { type: 'object', properties: { ok: { type: 'boolean' }, n: { type: 'integer', minimum: 0, maximum: 9 } }, required: ['ok', 'n'] }, param: 'guided_json' });
      for (const seed of [1, 2, 3]) {
        const c = await walkGrammar(service, choice, { vocabSize, stopTokenIds: [eos], closers, seed });
        expect(c.ended).toBe(true);
        expect(['Hello world', 'Hi "you"']).toContain(tok.decode(c.ids));
        const j = await walkGrammar(service, json, { vocabSize, stopTokenIds: [eos], closers, seed });
        expect(j.ended).toBe(true);
        const value = JSON.parse(tok.decode(j.ids)) as { ok: unknown; n: unknown };
        expect(typeof value.ok).toBe('boolean');
        expect(value.n).toBeGreaterThanOrEqual(0);
      }
      expect(service.loaded?.vocabType).toBe('byte_level');
    } finally {
      await service.close();
    }
  });

  it('an abort in the match worker loses its live matchers (with why); it restarts, and new matchers work', async () => {
    const service = new GrammarService({ script, modelDir: qwenTokenizerDir(), vocabSize: 151_936, stopTokenIds: [151_645] });
    try {
      const g = await service.compile({ type: 'regex', pattern: '[a-c]{2}', param: 'guided_regex' });
      const live = service.newMatcher(g);
      expect((await service.advance([{ matcher: live, newTokens: [] }])).status).toEqual(['ok']);
      // A grammar the check worker would have refused, sent to the match worker directly: xgrammar aborts there.
      const matchWorker = (service as unknown as { matcher: GrammarWorkerClient }).matcher;
      const reply = await matchWorker.request({ op: 'compile', key: 'bad', source: { kind: 'ebnf', grammar: 'root ::= ' } });
      expect(reply).toMatchObject({ type: 'error', fatal: true, message: expect.stringMatching(/EBNF parser error/) });
      const after = await service.advance([{ matcher: live, newTokens: [] }]);
      expect(after.status).toEqual(['lost']);
      expect(after.problems[0]).toMatch(/restarted/);
      expect(after.masks.slice(0, after.wordsPerRow).every((w) => w === -1)).toBe(true); // a lost row bans nothing
      const fresh = service.newMatcher(await service.compile({ type: 'regex', pattern: '[a-c]{2}', param: 'guided_regex' }));
      expect((await service.advance([{ matcher: fresh, newTokens: [] }])).status).toEqual(['ok']);
    } finally {
      await service.close();
    }
  });

  it('a model directory without tokenizer.json: compiles fail with why, every time, without restarting the worker', async () => {
    const empty = mkdtempSync(join(tmpdir(), 'afd-no-tok-'));
    const service = new GrammarService({ script, modelDir: empty, vocabSize: 1000, stopTokenIds: [1] });
    try {
      for (let i = 0; i < 2; i++) {
        await expect(service.compile({ type: 'choice', choices: ['a'], param: 'guided_choice' })).rejects.toMatchObject({ kind: 'engine_error', message: expect.stringMatching(/could not start: .*tokenizer\.json/) });
      }
    } finally {
      await service.close();
      rmSync(empty, { recursive: true, force: true });
    }
  });
});
