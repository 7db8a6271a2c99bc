/**
 * A Gated DeltaNet model served end to end (issue 40): `afd-agent launch` of make-model's
 * tiny Qwen3-Next (real role processes, the OpenAI API) with generated weights. Colocated
 * and 1A1F (attention and FFN ranks over TCP) give the same seeded text for a request of
 * n = 2 with a repeated prompt (each sample prefills its whole prompt into its own state
 * slot: no shared blocks, no prefix cache, which the metrics show);
 * an explicit --enable-prefix-caching is refused naming the flag.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { makeModel } from '../model/makeModel.js';
import { startLaunch, type StartedLaunch } from '../testing/LaunchProcess.js';

const home = mkdtempSync(join(tmpdir(), 'afd-hybrid-home-'));
const modelDir = join(home, 'tiny-qwen3-next');
afterAll(() => rmSync(home, { recursive: true, force: true }));

const launch = (args: string[]): Promise<StartedLaunch> =>
  startLaunch(['--stop-grace-ms', '5000', '--model', modelDir, '--load-format', 'dummy', '--seed', '5', '--max-num-seqs', '8', ...args], { home, readyMs: 150_000 });

const prompt = 'The lighthouse keeper counted the ships';

async function complete(api: string): Promise<string[]> {
  const res = await fetch(`${api}/v1/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'tiny-qwen3-next', prompt, max_tokens: 12, n: 2, temperature: 1, seed: 42, ignore_eos: true }),
  });
  expect(res.status).toBe(200);
  const body = (await res.json()) as { choices: { index: number; text: string }[] };
  return body.choices.sort((a, b) => a.index - b.index).map((c) => c.text);
}

async function metricsText(api: string): Promise<string> {
  return (await fetch(`${api}/metrics`)).text();
}

async function metric(api: string, name: string): Promise<number> {
  const text = await metricsText(api);
  const line = text.split('\n').find((l) => l.startsWith(name));
  return line === undefined ? NaN : Number(line.split(' ').at(-1));
}

async function stop(l: StartedLaunch): Promise<void> {
  expect(await l.term()).toBe(0);
}

describe('afd-agent launch of a Gated DeltaNet model (Qwen3-Next)', () => {
  it('serves n = 2 with seeded sampling; 1A1F equals colocated; no prefix reuse; --enable-prefix-caching refused', async () => {
    await makeModel({ arch: 'qwen3_next', preset: 'tiny', outDir: modelDir, configOnly: true });

    const colocated = await launch(['--topology', 'colocated']);
    // Prefix caching is off by default for this model (the rank logs why; the metrics say so).
    expect(await metricsText(colocated.api)).toMatch(/vllm:cache_config_info\{[^}]*enable_prefix_caching="False"/);
    const want = await complete(colocated.api);
    expect(want).toHaveLength(2);
    expect(want[0]).not.toBe(want[1]); // two samples, two seeds' worth of text
    // The same request again: computed in full (no prefix cache hits for this model).
    expect(await complete(colocated.api)).toEqual(want);
    expect(await metric(colocated.api, 'vllm:prefix_cache_hits_total')).toBe(0);
    await stop(colocated);

    const split = await launch(['--topology', '1A1F']);
    expect(await complete(split.api)).toEqual(want);
    await stop(split);

    await expect(launch(['--topology', 'colocated', '--enable-prefix-caching', '--restart', 'never'])).rejects.toThrow(/--enable-prefix-caching/);
  }, 400_000);
});
