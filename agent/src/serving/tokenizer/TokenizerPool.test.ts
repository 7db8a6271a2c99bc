/**
 * The tokenizer pool with real worker threads running the agent bundle (built from the
 * current sources): same ids as the inline tokenizer, the event loop stays free while a
 * long prompt is tokenised, a dead worker fails only its task and is replaced, and a bad
 * model directory or a full queue fail with what happened.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Worker } from 'node:worker_threads';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agentScript } from '../../testing/agentBundle.js';
import { qwenTokenizer, qwenTokenizerDir } from '../testing/qwenTokenizer.js';
import type { TextTokenizer } from './TextTokenizer.js';
import { PromptTooLong } from './PromptEncoder.js';
import { defaultTokenizerWorkers, TokenizerPool } from './TokenizerPool.js';

let script: string;
let tok: TextTokenizer;
let pool: TokenizerPool;
const longText = 'hello world, this is a test of a long prompt. '.repeat(20_000); // ~0.9 MB, ~0.5 s to tokenise

beforeAll(async () => {
  script = await agentScript();
  tok = await qwenTokenizer();
  pool = await TokenizerPool.start({ script, modelDir: qwenTokenizerDir(), workers: 1, inline: tok });
}, 120_000);
afterAll(() => pool?.close());

/** Longest gap between ticks of a 5 ms timer while `work` runs. */
async function longestLoopGap(work: () => Promise<unknown>): Promise<number> {
  let last = performance.now();
  let worst = 0;
  const timer = setInterval(() => {
    const now = performance.now();
    worst = Math.max(worst, now - last);
    last = now;
  }, 5);
  try {
    await work();
  } finally {
    clearInterval(timer);
  }
  return Math.max(worst, performance.now() - last);
}

describe('TokenizerPool', () => {
  it('gives the same ids as the tokenizer itself, for completions and chats, long and short', async () => {
    expect(await pool.encode(longText)).toEqual(tok.encode(longText));
    expect(await pool.encode('Hi there')).toEqual(tok.encode('Hi there'));
    const messages = [{ role: 'system', content: 'Be brief. '.repeat(500) }, { role: 'user', content: 'hi' }];
    expect(await pool.encodeChat(messages, { addGenerationPrompt: true })).toEqual(tok.encodeChat(messages, { addGenerationPrompt: true }));
    const withEnd = tok.encodeChat(messages, { addGenerationPrompt: false });
    expect(await pool.encode(longText, { addSpecialTokens: false })).toEqual(tok.encode(longText, false));
    // /detokenize: long lists decode in a worker, short ones inline; special tokens kept either way.
    expect(await pool.decode(withEnd)).toBe(tok.decode(withEnd, false));
    expect(await pool.decode(withEnd.slice(-3))).toBe(tok.decode(withEnd.slice(-3), false));
  });

  it('keeps the event loop free while a long prompt is tokenised (inline it is not)', async () => {
    // Two tries in the pool: on a loaded box (the CI's parallel test files) a GC or another
    // process can stall one window by 150 ms whatever the pool does.
    const inPool = Math.min(await longestLoopGap(() => pool.encode(longText)), await longestLoopGap(() => pool.encode(longText)));
    const inline = await longestLoopGap(async () => tok.encode(longText));
    process.stderr.write(`[figure] longest event-loop gap while a long prompt is tokenised: ${inPool.toFixed(1)} ms in the pool, ${inline.toFixed(1)} ms inline\n`);
    expect(inline).toBeGreaterThan(200); // what the pool saves the other streams of a rank
    expect(inPool).toBeLessThan(Math.max(100, inline / 4));
  });

  it('fails the task of a worker that dies, replaces the worker and serves the next one', async () => {
    const pending = pool.encode(longText);
    const slots = (pool as unknown as { slots: { worker: Worker; task: unknown }[] }).slots;
    await slots.find((s) => s.task !== null)!.worker.terminate();
    await expect(pending).rejects.toThrow(/tokenizer worker exited with code \d+ while tokenising this prompt/);
    expect(await pool.encode(longText.slice(0, 5000))).toEqual(tok.encode(longText.slice(0, 5000)));
    // The general worker comes back (the short lane's served meanwhile), and takes long prompts again.
    for (let t0 = Date.now(); pool.size < 2 && Date.now() - t0 < 30_000; ) await new Promise((r) => setTimeout(r, 50));
    expect(pool.size).toBe(2);
    expect(await pool.encode(longText.slice(0, 50_000))).toEqual(tok.encode(longText.slice(0, 50_000)));
  });

  it('refuses past its queue limit with queue_full, and after close', async () => {
    const small = await TokenizerPool.start({ script, modelDir: qwenTokenizerDir(), workers: 1, inline: tok, maxQueued: 1 });
    try {
      const a = small.encode(longText); // on the worker
      const b = small.encode(longText); // queued
      await expect(small.encode(longText)).rejects.toMatchObject({ name: 'ServingError', kind: 'queue_full' });
      await Promise.all([a, b]);
    } finally {
      await small.close();
    }
    await expect(small.encode(longText)).rejects.toThrow(/closed/);
  });

  it('serves a short prompt in its own lane while long ones hold the general worker', async () => {
    const order: string[] = [];
    const longs = [1, 2].map((i) => pool.encode(longText).then(() => order.push(`long ${i}`)));
    const short = 'seven 7 '.repeat(400); // 3.2 KB: over the inline limit, under the lane's
    const ids = await pool.encode(short).then((r) => (order.push('short'), r));
    expect(ids).toEqual(tok.encode(short));
    await Promise.all(longs);
    expect(order).toEqual(['short', 'long 1', 'long 2']);
  });

  it('stops counting a prompt past its token limit: PromptTooLong with a lower bound', async () => {
    const err = await pool.encode(longText, { atMostTokens: 5_000 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PromptTooLong);
    const atLeast = (err as PromptTooLong).atLeast;
    expect(atLeast).toBeGreaterThanOrEqual(5_000);
    expect(atLeast).toBeLessThan(tok.encode(longText).length);
    const messages = [{ role: 'user', content: longText }];
    await expect(pool.encodeChat(messages, { addGenerationPrompt: true }, { atMostTokens: 5_000 })).rejects.toBeInstanceOf(PromptTooLong);
    // Under its limit, the same prompt gets its exact ids.
    expect(await pool.encode(longText, { atMostTokens: 10_000_000 })).toEqual(tok.encode(longText));
  });

  it('drops the task of a caller that left: from the queue at once, from the worker at its next chunk', async () => {
    const slots = (pool as unknown as { slots: { worker: Worker; task: unknown }[] }).slots;
    const replies: string[] = [];
    const listen = (m: { type: string }): number => replies.push(m.type);
    for (const s of slots) s.worker.on('message', listen);
    try {
      const running = new AbortController();
      const waiting = new AbortController();
      // Counted chunk by chunk (over 4 characters a token of its limit), far from done.
      const a = pool.encode(longText, { atMostTokens: 200_000, signal: running.signal });
      const b = pool.encode(longText, { signal: waiting.signal });
      expect(pool.queued).toBe(1);
      waiting.abort();
      await expect(b).rejects.toMatchObject({ name: 'ServingError', kind: 'client_closed' });
      expect(pool.queued).toBe(0);
      await new Promise((r) => setTimeout(r, 20));
      running.abort();
      await expect(a).rejects.toMatchObject({ kind: 'client_closed' });
      const next = await pool.encode(longText.slice(0, 40_000));
      expect(next).toEqual(tok.encode(longText.slice(0, 40_000)));
      expect(replies).toContain('cancelled'); // the worker stopped, it did not finish the prompt
      expect(replies.filter((r) => r === 'done')).toHaveLength(1);
    } finally {
      for (const s of slots) s.worker.off('message', listen);
    }
    await expect(pool.encode(longText, { signal: AbortSignal.abort() })).rejects.toMatchObject({ kind: 'client_closed' });
  });

  it('says why it cannot start on a directory without tokenizer files', async () => {
    const empty = mkdtempSync(join(tmpdir(), 'afd-no-tok-'));
    try {
      await expect(TokenizerPool.start({ script, modelDir: empty, workers: 1, inline: tok })).rejects.toThrow(/could not load the tokenizer of .*cannot read .*tokenizer\.json/);
    } finally {
      rmSync(empty, { recursive: true, force: true });
    }
  });

  it('sizes itself from the cores: 1 on small hosts, at most 4', () => {
    expect([1, 2, 8, 16, 64, 256].map(defaultTokenizerWorkers)).toEqual([1, 1, 1, 2, 4, 4]);
  });
});
