/**
 * DeepSeek-V2 (the make-model `deepseek_v2 tiny` preset: MLA with its latent KV cache,
 * layer 0 dense, routed + shared experts) as real role processes on the CPU backend:
 * 1A1F, 2A2F and 3A2F, each with DBO off and on (the gate placement alternating), give
 * the colocated run's greedy completions; every layer, the dense one included, goes
 * through the connector and shows in the FFN rank's /afd/stats. The in-process matrix
 * over real TCP (native/src/comm/afdMatrix.test.ts) runs DeepSeek-V3 for every flag pair.
 */
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { rankStatsSchema, resolveTopology } from '@afd/shared';
import { freePortBlock } from '@afd/native/ports';
import { makeModel } from '../model/makeModel.js';
import { completeOnTwoRanks } from '../testing/rankHttp.js';
import { RoleProcess, startTopology, stopTopology } from '../testing/RoleProcess.js';
import { useTinyModelSetup } from '../testing/tinyModelSetup.js';

const prompts = [
  [9707, 11, 1879, 0],
  [785, 3974, 13876, 38835, 13],
  [16, 17, 18, 19, 20, 21, 22],
];
const maxTokens = 6;
const numLayers = 4;
const setup = useTinyModelSetup({ homePrefix: 'afd-deepseek-int-', arch: 'deepseek_v2', reference: { prompts, maxTokens } });
const { home, model } = setup;

beforeAll(() => {
  // Real text, different per prompt (a model that emits nothing would make equality trivial).
  for (const r of setup.reference) expect(r.length).toBeGreaterThan(0);
  expect(new Set(setup.reference).size).toBe(prompts.length);
});

const cases = [
  { topology: '1A1F', dbo: false, gate: false },
  { topology: '1A1F', dbo: true, gate: true },
  { topology: '2A2F', dbo: false, gate: true },
  { topology: '2A2F', dbo: true, gate: false },
  { topology: '3A2F', dbo: false, gate: false },
  { topology: '3A2F', dbo: true, gate: true },
];

describe.each(cases)('deepseek_v2 $topology (dbo $dbo, gate on attention $gate)', ({ topology, dbo, gate }) => {
  it('greedy completions equal the colocated run; every layer crosses the connector', { timeout: 240_000 }, async () => {
    const afdPort = await freePortBlock(resolveTopology(topology).ffn.ranks);
    const config = { computeGateOnAttention: gate, stepDeadlineMs: 20_000, dbo: { enabled: dbo, decodeTokenThreshold: 2, prefillTokenThreshold: 2 } };
    const { attn, ffn, attnUrls: urls, ffnUrls } = await startTopology({ topology, afdPort, model, home, config });

    // Each prompt goes to two attention ranks at once: batches of two sequences (DBO splits them).
    for (const r of await completeOnTwoRanks(urls, prompts, maxTokens)) expect(r.text, `prompt ${r.i} on attention rank ${r.rank}`).toBe(setup.reference[r.i]);

    // /afd/stats of every FFN rank that served steps: one row per layer, each with bytes both ways.
    for (const [f, url] of ffnUrls.entries()) {
      const stats = rankStatsSchema.parse(await (await fetch(`${url}/afd/stats`)).json());
      expect(stats.numLayers, `ffn ${f}`).toBe(numLayers);
      expect(stats.steps, `ffn ${f}`).toBeGreaterThan(0);
      for (let l = 0; l < numLayers; l++) {
        const sum = (rows: number[][]) => rows[l]!.reduce((a, b) => a + b, 0);
        expect(sum(stats.a2fBytes), `ffn ${f} layer ${l} A->F`).toBeGreaterThan(0);
        expect(sum(stats.f2aBytes), `ffn ${f} layer ${l} F->A`).toBeGreaterThan(0);
      }
    }
    const attnStats = rankStatsSchema.parse(await (await fetch(`${urls[0]}/afd/stats`)).json());
    expect(attnStats.numLayers).toBe(numLayers);
    expect(attnStats.kv!.blocksTotal).toBeGreaterThan(0);

    await stopTopology(attn, ffn);
  });
});

// Seeded sampling at temperature 1: the text is a function of the weights (greedy text of
// a tied random model tends to repeat the prompt's last token whatever the weights).
async function sample(url: string, prompt: string): Promise<string> {
  const res = await fetch(`${url}/v1/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'm', prompt, max_tokens: 12, temperature: 1, seed: 42, ignore_eos: true }),
  });
  const body = (await res.json()) as { choices?: { text: string }[] };
  if (!res.ok || !body.choices) throw new Error(`completion failed (${res.status}): ${JSON.stringify(body)}`);
  return body.choices[0]!.text;
}

describe('deepseek_v2 config only, --load-format dummy', () => {
  it('serves generated weights; 1A1F samples what colocated samples for the same seed', { timeout: 240_000 }, async () => {
    const dir = join(home, 'tiny-deepseek-v2-config-only');
    await makeModel({ arch: 'deepseek_v2', preset: 'tiny', outDir: dir, seed: 0, force: true, configOnly: true });
    const args = ['--load-format', 'dummy', '--seed', '7'];
    const colocated = await RoleProcess.start({ role: 'colocated', model: dir, home, args });
    const want = await sample(await colocated.ready(), 'The lighthouse keeper');
    await colocated.stop();
    expect(want.length).toBeGreaterThan(0);
    const afdPort = await freePortBlock(1);
    const ffn = await RoleProcess.start({ role: 'ffn', rank: 0, topology: '1A1F', afdPort, model: dir, home, args });
    const attn = await RoleProcess.start({ role: 'attention', rank: 0, topology: '1A1F', afdPort, model: dir, home, args });
    expect(await sample(await attn.ready(), 'The lighthouse keeper')).toBe(want);
    await ffn.ready();
    await stopTopology([attn], [ffn]);
  });
});
