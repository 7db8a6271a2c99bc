/**
 * Conversation affinity in the tokenizer pool (real worker threads running the agent
 * bundle): the turns of a chat go to the worker that tokenised its earlier turns, so the
 * long pieces of its history are tokenised once, whichever turn, and the ids stay exact.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agentScript } from '../../testing/agentBundle.js';
import { qwenTokenizer, qwenTokenizerDir } from '../testing/qwenTokenizer.js';
import type { ChatMessage } from './ChatTemplate.js';
import { conversationKey } from './conversationAffinity.js';
import type { TextTokenizer } from './TextTokenizer.js';
import { TokenizerPool } from './TokenizerPool.js';

let tok: TextTokenizer;
let pool: TokenizerPool;
beforeAll(async () => {
  tok = await qwenTokenizer();
  // Two workers: a general one and the short lane; nothing inline (every chat goes to a worker).
  pool = await TokenizerPool.start({ script: await agentScript(), modelDir: qwenTokenizerDir(), workers: 1, inline: tok, inlineMaxChars: 0 });
}, 120_000);
afterAll(() => pool?.close());

/** Words of one token each, different per seed: every message is its own long piece (> 256 chars). */
const text = (words: number, seed: number): string => Array.from({ length: words }, (_, i) => ['alpha', 'river', 'stone', 'cloud', 'paper', 'delta'][(i * 5 + seed * 7) % 6]).join(' ') + ` #${seed}`;

/** Turn k of conversation c: the shared system prompt, then k user/assistant exchanges and a user message. */
function turn(c: number, k: number): ChatMessage[] {
  const m: ChatMessage[] = [{ role: 'system', content: text(400, 1) }];
  for (let j = 0; j < k; j++) m.push({ role: 'user', content: text(80, 100 * c + 2 * j) }, { role: 'assistant', content: text(80, 100 * c + 2 * j + 1) });
  m.push({ role: 'user', content: text(80, 100 * c + 2 * k) });
  return m;
}

/** Two conversations whose keys prefer different workers of the two. */
function pickTwo(): [number, number] {
  const a = 0;
  const b = [1, 2, 3, 4, 5, 6, 7, 8].find((c) => conversationKey(turn(c, 0)) % 2 !== conversationKey(turn(a, 0)) % 2);
  if (b === undefined) throw new Error('no conversation of the other parity among 8');
  return [a, b];
}

describe('TokenizerPool conversation affinity', () => {
  it('the turns of a conversation share a key; other conversations get others', () => {
    expect(conversationKey(turn(0, 0))).toBe(conversationKey(turn(0, 3)));
    const keys = new Set([0, 1, 2, 3, 4, 5].map((c) => conversationKey(turn(c, 2))));
    expect(keys.size).toBe(6);
  });

  it('each long piece of a history is tokenised once per worker that needs it, whatever order the turns arrive in; the ids are exact', async () => {
    // Two conversations that prefer different workers (keys of different parity over the
    // two workers: the general one and the short lane), sent together each turn, in turns
    // alternating which comes first: first come, first served would swap their workers.
    const [a, b] = pickTwo();
    const turns = 5;
    const before = pool.stats().pieceCache;
    for (let k = 0; k < turns; k++) {
      const order = k % 2 === 0 ? [a, b] : [b, a];
      const got = await Promise.all(order.map((c) => pool.encodeChat(turn(c, k), { addGenerationPrompt: true })));
      got.forEach((ids, i) => expect(ids).toEqual(tok.encodeChat(turn(order[i]!, k), { addGenerationPrompt: true })));
    }
    const after = pool.stats().pieceCache;
    const [hits, misses] = [after.hits - before.hits, after.misses - before.misses];
    // The rendered pieces long enough to be cached are the messages with their role line:
    // turn k has 2k + 2 of them, per conversation.
    expect(hits + misses).toBe(2 * Array.from({ length: turns }, (_, k) => 2 * k + 2).reduce((x, y) => x + y, 0));
    // New in turn k: the user message, and from turn 1 the previous answer (2 x turns - 1
    // per conversation), and the shared system prompt once per worker. Nothing else: each
    // conversation stays on the worker that has its history.
    expect(misses).toBe(2 * (2 * turns - 1) + 2);
  });

  it('a burst of chats from many conversations keeps every worker busy and gives exact ids', async () => {
    const all = Array.from({ length: 12 }, (_, c) => turn(10 + c, 2));
    const got = await Promise.all(all.map((m) => pool.encodeChat(m, { addGenerationPrompt: true })));
    got.forEach((ids, i) => expect(ids).toEqual(tok.encodeChat(all[i]!, { addGenerationPrompt: true })));
  });

  it('a chat waits at most stealAfterMs for its own busy worker, then another takes it; never stolen, it waits', async () => {
    // The general worker is held by a 0.9 MB prompt (only it takes prompts past the lane);
    // 8 small chats come at once: those whose own worker is the busy one are taken by the
    // short lane after 25 ms, long before the big prompt is done.
    const big = 'hello world, this is a test of a long prompt. '.repeat(20_000);
    const chats = Array.from({ length: 8 }, (_, c) => [{ role: 'system', content: `conversation ${c} ` + 'x'.repeat(300) }, { role: 'user', content: 'hi' }]);
    const race = async (p: TokenizerPool): Promise<{ chatsDone: number; bigDone: number }> => {
      const t0 = performance.now();
      const bigDone = p.encode(big).then(() => performance.now() - t0);
      await new Promise((r) => setTimeout(r, 20)); // the big prompt is on the general worker
      const chatsDone = await Promise.all(chats.map((m) => p.encodeChat(m, { addGenerationPrompt: true }))).then(() => performance.now() - t0);
      return { chatsDone, bigDone: await bigDone };
    };
    const stealing = await race(pool);
    expect(stealing.chatsDone).toBeLessThan(stealing.bigDone);
    const patient = await TokenizerPool.start({ script: await agentScript(), modelDir: qwenTokenizerDir(), workers: 1, inline: tok, inlineMaxChars: 0, stealAfterMs: 60_000 });
    try {
      const waiting = await race(patient);
      // Half of the 8 keys (odd and even) pick the general worker: they wait for it.
      expect(waiting.chatsDone).toBeGreaterThanOrEqual(waiting.bigDone);
    } finally {
      await patient.close();
    }
  });
});
