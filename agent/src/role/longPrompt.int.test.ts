/**
 * One large body must not stall the other streams of its rank (a real colocated role
 * process, CPU, the small serving model with the real Qwen3 tokenizer, a 40960-token
 * window). While a 13.5 MB chat body (under the 16 MiB cap) is refused and three
 * ~100k-token prompts are counted and refused, four streams keep getting tokens with no
 * gap of 100 ms or more: the rank parses large bodies off the event loop, refuses text no
 * context window can hold before tokenising it, and tokenises the rest in its worker pool,
 * stopping once a prompt passes the window (tokenising on the event loop, the gap is ~2 s).
 *
 * A flood of prompts just under the character bound (7.5 MB each) must not hold up a short
 * one: it has a lane of its own; and the prompts of clients that left are dropped.
 *
 * An inter-token gap also grows when other programs take the cores, so the window is
 * measured up to three times and one must stay under 100 ms (a regression stalls every
 * attempt), or, where the box itself makes gaps of 100 ms or more in the 1.5 s before the
 * load, add less than 50 ms to them; every attempt must refuse every body. The bodies are sent from
 * worker threads, so that the test's own loop, which times the streams, does not stall on
 * them. The figures are in docs/afd-runtime.md.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { killAllRoles, RoleProcess } from '../testing/RoleProcess.js';
import { makeServingModel } from '../testing/servingModel.js';
import { stagePost } from '../testing/offThreadPost.js';
import { longestGapMs, postStream, type StreamOutcome } from '../testing/sseClient.js';
import { until as waitUntil } from '../testing/until.js';

const home = mkdtempSync(join(tmpdir(), 'afd-long-prompt-'));
let rank: RoleProcess;
let url: string;

beforeAll(async () => {
  const model = await makeServingModel(join(home, 'model'));
  // 24 MiB of KV: 49152 tokens, so the window is the model's 40960 and a 7.5 MB prompt
  // passes the character bound (40960 x 192 characters).
  rank = await RoleProcess.start({ role: 'colocated', model, home, kvCacheMib: 24, args: ['--tokenizer-workers', '1'] });
  url = await rank.ready();
}, 180_000);

afterAll(async () => {
  await killAllRoles();
  rmSync(home, { recursive: true, force: true });
});

const post = (path: string, body: Uint8Array): Promise<{ status: number; ms: number; body: string }> => {
  const t0 = performance.now();
  return fetch(`${url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body }).then(async (r) => ({ status: r.status, ms: performance.now() - t0, body: await r.text() }));
};

const until = (cond: () => Promise<boolean>, what: string, ms: number): Promise<number> =>
  waitUntil(cond, what, ms, { pollMs: 50, explain: () => rank.describe() });

const metric = async (pattern: RegExp): Promise<boolean> => pattern.test(await fetch(`${url}/metrics`).then((r) => r.text()));

/** A sample's value on /metrics (0 when absent); `series` is the name with its labels. */
async function sample(series: string): Promise<number> {
  const text = await fetch(`${url}/metrics`).then((r) => r.text());
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? 0 : Number(line.slice(series.length + 1));
}
const outcome = (o: string): Promise<number> => sample(`afd:tokenizer_tasks_total{outcome="${o}"}`);
const waiting = (): Promise<number> => sample('afd:tokenizer_tasks_waiting');

// Built before any stream starts, so the test's own event loop is free while it measures.
const huge = Buffer.from(JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hello world, '.repeat(1_040_000) }] })); // 13.5 MB
const long = Buffer.from(JSON.stringify({ model: 'm', prompt: ' hello'.repeat(100_000), max_tokens: 1 })); // ~100k tokens each, ~0.4 s to tokenise whole
const flood = Buffer.from(JSON.stringify({ model: 'm', prompt: 'hello world, '.repeat(577_000), max_tokens: 1 })); // 7.5 MB, ~10 s to tokenise whole
const floodChat = Buffer.from(JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hello world, '.repeat(577_000) }], max_tokens: 1 }));

/** How long the streams are watched before the load (about as long as the load's window). */
const BASELINE_MS = 1_500;

/**
 * Whether a window passes: its longest gap is under 100 ms, or, on a box whose other
 * programs already make gaps of 100 ms or more in the window before, the load added less
 * than 50 ms to that baseline (a body parsed on the event loop adds 60-200 ms).
 */
const passes = (m: { gapMs: number; baselineMs: number }): boolean => m.gapMs < 100 || (m.baselineMs >= 100 && m.gapMs - m.baselineMs < 50);

/** One window: four streams, then the large bodies; the longest gap of the streams during it. */
async function measure(): Promise<{ gapMs: number; baselineMs: number; hugeMs: number; longMs: number }> {
  const stop = new AbortController();
  const streams: Promise<StreamOutcome>[] = Array.from({ length: 4 }, (_, i) =>
    postStream(`${url}/v1/completions`, { model: 'm', prompt: [10 + i, 20, 30], max_tokens: 30_000, ignore_eos: true, stream: true }, {}, { signal: stop.signal }),
  );
  await until(() => metric(/vllm:num_requests_running\{model_name="m"\} 4\n/), 'the four streams running', 60_000);
  // Staged first (starting threads and copying bodies stalls this loop). The bodies go out from worker threads: handing 13.5 MB to fetch stalls the sender's own
  // event loop, which times the streams here.
  const hugeSender = await stagePost(`${url}/v1/chat/completions`, huge);
  const longSenders = await Promise.all(Array.from({ length: 3 }, () => stagePost(`${url}/v1/completions`, long)));
  await new Promise((r) => setTimeout(r, BASELINE_MS)); // a baseline of gaps before the load

  const from = performance.now();
  const refusedHuge = await hugeSender.go();
  const refusedLong = await Promise.all(longSenders.map((s) => s.go()));
  const to = performance.now();
  await new Promise((r) => setTimeout(r, 300)); // events after the window close its last gap
  stop.abort();
  const outcomes = await Promise.all(streams);

  expect(refusedHuge.status, refusedHuge.body).toBe(400);
  expect(refusedHuge.body).toMatch(/maximum context length is \d+ tokens.*messages have at least \d+ characters/);
  expect(refusedHuge.ms).toBeLessThan(5000); // 6.5-7.8 s before, on an idle box: it was tokenised first
  for (const r of refusedLong) {
    expect(r.status, r.body).toBe(400);
    expect(r.body).toMatch(/maximum context length is 40960 tokens.*your prompt has at least \d+ tokens \(tokenising stopped once it passed the limit\)/);
  }
  for (const o of outcomes) {
    expect(o.status).toBe(200);
    expect(o.errors).toEqual([]);
    expect(o.events.at(-1)!.atMs).toBeGreaterThan(to); // still streaming after the window: its gaps cover it
  }
  // The aborted streams freed their KV blocks.
  await until(() => metric(/vllm:kv_cache_usage_perc\{model_name="m"\} 0\n/), 'KV blocks freed after the streams were aborted', 15_000);
  return {
    gapMs: Math.max(...outcomes.map((o) => longestGapMs(o, from, to))),
    baselineMs: Math.max(...outcomes.map((o) => longestGapMs(o, from - BASELINE_MS, from))),
    hugeMs: refusedHuge.ms,
    longMs: to - from - refusedHuge.ms,
  };
}

describe('a large body and long prompts on a serving rank', () => {
  it('are refused while the rank\'s other streams keep an inter-token gap under 100 ms', { timeout: 400_000 }, async () => {
    expect(huge.length).toBeGreaterThan(13_000_000);
    expect(huge.length).toBeLessThan(16 * 2 ** 20);
    const windows: { gapMs: number; baselineMs: number }[] = [];
    for (let attempt = 1; attempt <= 3 && !windows.some(passes); attempt++) {
      const m = await measure();
      process.stderr.write(
        `[figure] attempt ${attempt}: 13.5 MB chat body refused in ${m.hugeMs.toFixed(0)} ms; three ~100k-token prompts refused in ${m.longMs.toFixed(0)} ms; ` +
          `longest inter-token gap of the 4 other streams meanwhile: ${m.gapMs.toFixed(0)} ms (baseline, the ${BASELINE_MS / 1e3} s before: ${m.baselineMs.toFixed(0)} ms)\n`,
      );
      windows.push(m);
    }
    const seen = windows.map((w) => `${w.gapMs.toFixed(0)} ms (baseline ${w.baselineMs.toFixed(0)} ms)`).join(', ');
    expect(windows.some(passes), `longest gaps of the windows: ${seen}`).toBe(true);
  });
});

describe('a flood of prompts just under the character bound', () => {
  it('does not hold up a 3 KB prompt (its answer within 0.5 s), and the prompts of clients that left are dropped', { timeout: 120_000 }, async () => {
    expect(flood.length).toBeGreaterThan(7_400_000);
    // 3 KB prompts of common words (token ids under the model's 4096), ~870 tokens; the
    // second starts with another word, so the prefix cache does not serve it.
    const words = ' the of and to in is it that for on with as at by';
    const smallPrompt = (first: string): Buffer => Buffer.from(JSON.stringify({ model: 'm', prompt: first + words.repeat(62), max_tokens: 4 }));
    const alone = await post('/v1/completions', smallPrompt('1'));
    expect(alone.status, alone.body).toBe(200);
    const tooLong0 = await outcome('too_long');
    const t0 = performance.now();
    const big = Array.from({ length: 3 }, () => post('/v1/completions', flood));
    await until(async () => (await waiting()) >= 1, 'a 7.5 MB prompt waiting behind another for the tokenizer', 30_000);
    const small = await post('/v1/completions', smallPrompt('2'));
    const refused = await Promise.all(big);
    const all = performance.now() - t0;
    process.stderr.write(`[figure] a 3 KB prompt answered in ${small.ms.toFixed(0)} ms (alone: ${alone.ms.toFixed(0)} ms) while three 7.5 MB prompts were counted and refused (all three in ${all.toFixed(0)} ms)\n`);
    expect(small.status, small.body).toBe(200);
    expect(JSON.parse(small.body).usage).toMatchObject({ prompt_tokens: JSON.parse(alone.body).usage.prompt_tokens, completion_tokens: 4 });
    expect(small.ms).toBeLessThan(500);
    for (const r of refused) {
      expect(r.status, r.body).toBe(400);
      expect(r.body).toMatch(/maximum context length is 40960 tokens.*your prompt has at least \d+ tokens/);
      expect(r.ms).toBeLessThan(8_000); // tokenised whole, each took ~10 s of the one worker
    }
    expect((await outcome('too_long')) - tooLong0).toBe(3);

    // Three clients send 7.5 MB chats and leave while the first is counted: the waiting ones
    // leave the queue, the running one stops; none is counted to its end.
    const cancelled0 = await outcome('cancelled');
    const tooLong1 = await outcome('too_long');
    const gone = new AbortController();
    const left = Array.from({ length: 3 }, () =>
      fetch(`${url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: floodChat, signal: gone.signal }).then(
        (r) => `answered ${r.status}`,
        () => 'aborted',
      ),
    );
    await until(async () => (await waiting()) >= 1, 'a 7.5 MB chat waiting behind another for the tokenizer', 30_000);
    gone.abort();
    // On a slow box the first chat's count can end (a 400: too long) before the others leave.
    const ends = await Promise.all(left);
    expect(ends.filter((e) => e === 'aborted').length, ends.join(', ')).toBeGreaterThanOrEqual(2);
    expect(ends.filter((e) => e !== 'aborted').every((e) => e === 'answered 400'), ends.join(', ')).toBe(true);
    await until(async () => (await waiting()) === 0 && (await outcome('cancelled')) - cancelled0 >= 2, 'the chats of the clients that left cancelled', 30_000);
    await new Promise((r) => setTimeout(r, 1_000)); // a chat still counted would end as too_long meanwhile
    const [cancelled, tooLong] = [(await outcome('cancelled')) - cancelled0, (await outcome('too_long')) - tooLong1];
    process.stderr.write(`[figure] three clients left while their 7.5 MB chats waited or were counted: ${cancelled} cancelled, ${tooLong} counted to the limit\n`);
    expect(cancelled + tooLong).toBeLessThanOrEqual(3);
    expect(tooLong).toBeLessThanOrEqual(1);
  });
});
