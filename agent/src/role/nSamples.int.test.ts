/**
 * `n` samples on the real CPU engine, as real role processes (colocated, and 1A1F with
 * dual-batch overlap): a request with n=4 shares one prefill of its prompt's full KV
 * blocks, and that must change no token: its four texts equal four n=1 requests with seeds
 * seed..seed+3 (sampled), and greedy samples equal the n=1 greedy text. No KV block is left.
 */
import { describe, expect, it } from 'vitest';
import { freePortBlock } from '@afd/native/ports';
import { testAddonBuilt } from '../testing/agentBundle.js';
import { RoleProcess, startTopology, stopTopology } from '../testing/RoleProcess.js';
import { useTinyModelSetup } from '../testing/tinyModelSetup.js';

// 40 prompt tokens: 2 full blocks of 16 are shared, each sample computes the last 8 itself.
const prompt = Array.from({ length: 40 }, (_, i) => 100 + ((i * 7919) % 20_000));
const maxTokens = 8;
const setup = useTinyModelSetup({ homePrefix: 'afd-n-samples-int-', arch: 'qwen3_moe' });

interface Completion {
  choices: { index: number; text: string; finish_reason: string }[];
  usage: { prompt_tokens: number; completion_tokens: number };
}

async function complete(url: string, body: Record<string, unknown>): Promise<Completion> {
  const res = await fetch(`${url}/v1/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'm', prompt, max_tokens: maxTokens, ignore_eos: true, ...body }),
  });
  const json = (await res.json()) as Completion;
  if (!res.ok) throw new Error(`completion failed (${res.status}): ${JSON.stringify(json)}`);
  return json;
}

/** The checks every topology must pass against its attention (or colocated) rank's URL. */
async function checkSamples(url: string): Promise<void> {
  const seed = 2024;
  const sampled = await complete(url, { n: 4, temperature: 1, seed });
  expect(sampled.choices.map((c) => c.index)).toEqual([0, 1, 2, 3]);
  expect(sampled.usage).toMatchObject({ prompt_tokens: prompt.length, completion_tokens: 4 * maxTokens });
  const singles = await Promise.all([0, 1, 2, 3].map((i) => complete(url, { temperature: 1, seed: seed + i })));
  expect(sampled.choices.map((c) => c.text)).toEqual(singles.map((s) => s.choices[0]!.text));
  expect(new Set(sampled.choices.map((c) => c.text)).size).toBeGreaterThan(1);

  const greedy = await complete(url, { n: 4, temperature: 0 });
  const one = await complete(url, { temperature: 0 });
  expect(greedy.choices.map((c) => c.text)).toEqual(new Array(4).fill(one.choices[0]!.text));

  const stats = (await (await fetch(`${url}/afd/stats`)).json()) as { kv: { blocksUsed: number } };
  expect(stats.kv.blocksUsed).toBe(0);
}

describe.skipIf(!testAddonBuilt())('n samples on real role processes (CPU)', () => {
  it('colocated: n=4 equals four n=1 requests with seeds seed..seed+3', { timeout: 240_000 }, async () => {
    const rank = await RoleProcess.start({ role: 'colocated', model: setup.model, home: setup.home, threads: 2 });
    try {
      await checkSamples(await rank.ready(120_000));
      expect((await rank.stop()).code).toBe(0);
    } finally {
      await rank.stop();
    }
  });

  it('1A1F with dual-batch overlap: n=4 equals four n=1 requests with seeds seed..seed+3', { timeout: 240_000 }, async () => {
    const afdPort = await freePortBlock(1);
    const config = { dbo: { enabled: true, decodeTokenThreshold: 2, prefillTokenThreshold: 16 } };
    const topo = await startTopology({ topology: '1A1F', afdPort, model: setup.model, home: setup.home, config });
    await checkSamples(topo.attnUrls[0]!);
    await stopTopology(topo.attn, topo.ffn);
  });
});
