/**
 * Dummy weights on the CPU backend (the CI side of --load-format dummy): generated in
 * place from the seed, reproducible, per-role generation equal to colocated, and scaled
 * so that the model is not degenerate (logits are not flat, greedy tokens vary).
 */
import { afterAll, describe, expect, it } from 'vitest';
import { dummyLoadSpec } from './checkpoint/dummy.js';
import { parseModelConfig } from './checkpoint/config.js';
import { tinyQwen3MoeConfig } from './testing/checkpointTesting.js';
import { Engine } from './engine.js';
import { generateGreedy, scatteredBlocks } from './testing/engineTesting.js';

const config = parseModelConfig('dummy/config.json', tinyQwen3MoeConfig({ hidden_size: 64, head_dim: 16, moe_intermediate_size: 32, num_experts: 8, vocab_size: 256 }));
const opts = { threads: 1, numKvBlocks: 31, kvBlockSize: 4 };
const engines: Engine[] = [];
afterAll(() => engines.forEach((e) => e.close()));

async function load(role: 'colocated' | 'attention' | 'ffn', seed: number): Promise<Engine> {
  const e = await Engine.load(dummyLoadSpec(config, role, { seed }).spec, opts);
  engines.push(e);
  return e;
}

const prompt = [11, 200, 37, 4, 99, 150];
const blocks = scatteredBlocks(5, 3, 31);

describe('dummy weights on the CPU engine', () => {
  it('are generated from the seed: the same seed gives the same logits, another seed others', async () => {
    const a = await generateGreedy(await load('colocated', 4), prompt, 5, { blocks });
    const b = await generateGreedy(await load('colocated', 4), prompt, 5, { blocks });
    const c = await generateGreedy(await load('colocated', 5), prompt, 5, { blocks });
    expect(b.tokens).toEqual(a.tokens);
    for (let i = 0; i < a.logits.length; i++) expect(b.logits[i]).toEqual(a.logits[i]);
    expect(c.logits[0]).not.toEqual(a.logits[0]);
  });

  it('each role generates only its own tensors, and 1A1F (local FFN engine) equals colocated bit for bit', async () => {
    const colocated = await load('colocated', 9);
    const attn = await load('attention', 9);
    const ffn = await load('ffn', 9);
    expect(attn.info.residentWeightBytes + ffn.info.residentWeightBytes).toBe(colocated.info.residentWeightBytes);
    attn.attachFfn(ffn);
    const ref = await generateGreedy(colocated, prompt, 5, { blocks });
    const got = await generateGreedy(attn, prompt, 5, { blocks });
    expect(got.tokens).toEqual(ref.tokens);
    for (let i = 0; i < ref.logits.length; i++) expect(got.logits[i]).toEqual(ref.logits[i]);
  });

  it('are scaled like a trained model: logits are spread, not flat', async () => {
    const out = await generateGreedy(await load('colocated', 1), prompt, 1, { blocks });
    const l = out.logits[0]!;
    const mean = l.reduce((s, v) => s + v, 0) / l.length;
    const std = Math.sqrt(l.reduce((s, v) => s + (v - mean) ** 2, 0) / l.length);
    const max = Math.max(...l);
    const z = l.reduce((s, v) => s + Math.exp(v - max), 0);
    const top = 1 / z;
    expect(Number.isFinite(std) && std).toBeGreaterThan(0.05);
    // The most likely token is clearly above uniform (1 / 256), far from one-hot.
    expect(top).toBeGreaterThan(2 / l.length);
    expect(top).toBeLessThan(0.9);
  });
});
