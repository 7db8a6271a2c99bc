/**
 * Automatic prefix caching across topologies, as real role processes on the CPU with a tiny
 * random-weight checkpoint. A set of multi-turn conversations (three long system prompts,
 * three turns each, every turn resending the whole history) is answered greedily by a
 * colocated rank with --no-enable-prefix-caching: the reference. With caching on (the
 * default), a colocated rank, the attention rank of 1A1F and both attention ranks of 2A2F
 * with dual-batch overlap answer exactly the same, while later turns and repeated system
 * prompts report cached prompt tokens and vllm:prefix_cache_hits_total grows. A cache_salt
 * sees only what its own salt cached. Under memory pressure (a KV cache far smaller than the
 * conversations, so cached blocks are evicted while others are in use), concurrent
 * conversations still answer as the reference. The demo model (a trained checkpoint) answers
 * the same conversations alike with and without caching.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { freePortBlock } from '@afd/native/ports';
import { findDemoModelDir } from '../model/demoModel.js';
import { testAddonBuilt } from '../testing/agentBundle.js';
import { RoleProcess, startTopology, stopTopology } from '../testing/RoleProcess.js';
import { useTinyModelSetup } from '../testing/tinyModelSetup.js';

const setup = useTinyModelSetup({ homePrefix: 'afd-prefix-int-', arch: 'qwen3_moe' });

const WORDS = 'river stone light garden paper window silver market orange cloud forest letter engine bridge winter music island yellow candle harbor'.split(' ');
/** A long system prompt (about `n` tokens), a different one per seed. */
const systemPrompt = (seed: number, n = 120): string => Array.from({ length: n }, (_, i) => WORDS[(i * (seed + 3) + seed * 7) % WORDS.length]).join(' ');
const SYSTEMS = [systemPrompt(0), systemPrompt(1), systemPrompt(2)];
const USER_TURNS = ['Tell me about the garden.', 'And the river?', 'Summarise both.'];

type Message = { role: 'system' | 'user' | 'assistant'; content: string };
interface Turn {
  text: string;
  promptTokens: number;
  cachedTokens: number;
}

async function chat(url: string, messages: Message[], extra: Record<string, unknown> = {}): Promise<Turn> {
  const res = await fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'm', messages, temperature: 0, max_tokens: 10, ...extra }),
  });
  const body = (await res.json()) as { choices: { message: { content: string } }[]; usage: { prompt_tokens: number; prompt_tokens_details?: { cached_tokens: number } } };
  expect(res.status, JSON.stringify(body)).toBe(200);
  return { text: body.choices[0]!.message.content, promptTokens: body.usage.prompt_tokens, cachedTokens: body.usage.prompt_tokens_details?.cached_tokens ?? 0 };
}

/** Conversation c: its system prompt, then USER_TURNS one after another, each with the history so far. */
async function converse(url: string, c: number): Promise<Turn[]> {
  const messages: Message[] = [{ role: 'system', content: SYSTEMS[c % SYSTEMS.length]! }];
  const turns: Turn[] = [];
  for (const user of USER_TURNS) {
    messages.push({ role: 'user', content: `${user} (${c})` });
    const turn = await chat(url, messages);
    turns.push(turn);
    messages.push({ role: 'assistant', content: turn.text });
  }
  return turns;
}

/** Conversations 0..n-1, `parallel` at a time; their answers in order. */
async function conversations(url: string, n: number, parallel = 1): Promise<Turn[][]> {
  const out: Turn[][] = new Array(n);
  let next = 0;
  await Promise.all(
    Array.from({ length: parallel }, async () => {
      while (next < n) {
        const c = next++;
        out[c] = await converse(url, c);
      }
    }),
  );
  return out;
}

const textsOf = (runs: Turn[][]): string[][] => runs.map((turns) => turns.map((t) => t.text));

async function metric(url: string, name: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${name}{`) || l.startsWith(`${name} `));
  if (!line) throw new Error(`no ${name} in /metrics`);
  return Number(line.split(' ').pop());
}

const NUM_CONVERSATIONS = 6;

describe.skipIf(!testAddonBuilt())('prefix caching across topologies (real processes, CPU)', () => {
  let reference: Turn[][];

  beforeAll(async () => {
    const rank = await RoleProcess.start({ role: 'colocated', model: setup.model, home: setup.home, args: ['--no-enable-prefix-caching'] });
    const url = await rank.ready(120_000);
    reference = await conversations(url, NUM_CONVERSATIONS);
    expect(await metric(url, 'vllm:prefix_cache_hits_total')).toBe(0);
    expect(reference.flat().every((t) => t.cachedTokens === 0)).toBe(true);
    expect((await (await fetch(`${url}/metrics`)).text())).toContain('enable_prefix_caching="False"');
    expect((await rank.stop()).code).toBe(0);
  }, 300_000);

  it('colocated: the same answers; later turns and repeated system prompts are served from the cache; salts isolate', { timeout: 300_000 }, async () => {
    const rank = await RoleProcess.start({ role: 'colocated', model: setup.model, home: setup.home });
    const url = await rank.ready(120_000);
    expect((await (await fetch(`${url}/metrics`)).text())).toContain('enable_prefix_caching="True"');
    const runs = await conversations(url, NUM_CONVERSATIONS);
    expect(textsOf(runs)).toEqual(textsOf(reference));
    for (const turns of runs) {
      // Turn k resends turn k-1's whole prompt: at least its full blocks are found.
      for (let k = 1; k < turns.length; k++) expect(turns[k]!.cachedTokens).toBeGreaterThanOrEqual(Math.floor((turns[k - 1]!.promptTokens - 1) / 16) * 16 - 16);
      for (const t of turns) {
        expect(t.cachedTokens % 16).toBe(0);
        expect(t.cachedTokens).toBeLessThan(t.promptTokens);
      }
    }
    // Conversations 3..5 reuse the system prompts of 0..2: their first turn hits too.
    for (let c = 3; c < NUM_CONVERSATIONS; c++) expect(runs[c]![0]!.cachedTokens).toBeGreaterThanOrEqual(96);
    const hits = await metric(url, 'vllm:prefix_cache_hits_total');
    expect(hits).toBe(runs.flat().reduce((n, t) => n + t.cachedTokens, 0));
    expect(await metric(url, 'vllm:prefix_cache_queries_total')).toBeGreaterThan(hits);

    // cache_salt: the same messages under a new salt find nothing, then find the salt's own blocks.
    const messages: Message[] = [{ role: 'system', content: SYSTEMS[0]! }, { role: 'user', content: `${USER_TURNS[0]} (0)` }];
    const salted = await chat(url, messages, { cache_salt: 'tenant-a' });
    expect(salted.cachedTokens).toBe(0);
    expect(salted.text).toBe(reference[0]![0]!.text);
    expect((await chat(url, messages, { cache_salt: 'tenant-a' })).cachedTokens).toBeGreaterThan(0);
    expect((await chat(url, messages, { cache_salt: 'tenant-b' })).cachedTokens).toBe(0);
    expect((await chat(url, messages)).cachedTokens).toBeGreaterThan(0);
    expect((await rank.stop()).code).toBe(0);
  });

  it('1A1F: the same answers, with hits', { timeout: 300_000 }, async () => {
    const afdPort = await freePortBlock(1);
    const topo = await startTopology({ topology: '1A1F', afdPort, model: setup.model, home: setup.home });
    const runs = await conversations(topo.attnUrls[0]!, NUM_CONVERSATIONS);
    expect(textsOf(runs)).toEqual(textsOf(reference));
    expect(await metric(topo.attnUrls[0]!, 'vllm:prefix_cache_hits_total')).toBeGreaterThan(0);
    await stopTopology(topo.attn, topo.ffn);
  });

  it('2A2F with dual-batch overlap: both attention ranks give the same answers, with hits', { timeout: 300_000 }, async () => {
    const afdPort = await freePortBlock(2);
    const config = { stepDeadlineMs: 20_000, dbo: { enabled: true, decodeTokenThreshold: 2, prefillTokenThreshold: 2 } };
    const topo = await startTopology({ topology: '2A2F', afdPort, model: setup.model, home: setup.home, config });
    const both = await Promise.all(topo.attnUrls.map((url) => conversations(url, NUM_CONVERSATIONS, 2)));
    for (const [i, runs] of both.entries()) {
      expect(textsOf(runs)).toEqual(textsOf(reference));
      expect(await metric(topo.attnUrls[i]!, 'vllm:prefix_cache_hits_total')).toBeGreaterThan(0);
    }
    await stopTopology(topo.attn, topo.ffn);
  });

  it('memory pressure: a cache far smaller than the conversations evicts cached blocks, never corrupting a running one', { timeout: 300_000 }, async () => {
    const rank = await RoleProcess.start({ role: 'colocated', model: setup.model, home: setup.home, kvCacheMib: 2, maxNumSeqs: 4 });
    const url = await rank.ready(120_000);
    const numBlocks = Number(/vllm:cache_config_info\{[^}]*num_gpu_blocks="(\d+)"/.exec(await (await fetch(`${url}/metrics`)).text())![1]);
    const runs = await conversations(url, NUM_CONVERSATIONS, 4);
    expect(textsOf(runs)).toEqual(textsOf(reference));
    const distinctTokens = runs.flat().reduce((n, t) => n + t.promptTokens, 0);
    expect(numBlocks * 16).toBeLessThan(distinctTokens / 3); // far more was cached than fits: blocks were evicted
    expect(await metric(url, 'vllm:prefix_cache_hits_total')).toBeGreaterThan(0);
    expect((await rank.stop()).code).toBe(0);
  });
});

const demo = findDemoModelDir();
describe.runIf(testAddonBuilt() && demo !== null)('prefix caching with the demo model (a trained checkpoint)', () => {
  it('answers multi-turn conversations as without caching, with hits', { timeout: 300_000 }, async () => {
    const answers = async (args: string[]): Promise<{ texts: string[][]; hits: number }> => {
      const rank = await RoleProcess.start({ role: 'colocated', model: demo!, home: setup.home, args });
      const url = await rank.ready(120_000);
      const texts = textsOf(await conversations(url, 4));
      const hits = await metric(url, 'vllm:prefix_cache_hits_total');
      expect((await rank.stop()).code).toBe(0);
      return { texts, hits };
    };
    const off = await answers(['--no-enable-prefix-caching']);
    const on = await answers([]);
    expect(on.texts).toEqual(off.texts);
    expect(off.hits).toBe(0);
    expect(on.hits).toBeGreaterThan(0);
  });
});
