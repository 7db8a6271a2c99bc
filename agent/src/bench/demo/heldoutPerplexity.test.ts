import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Engine } from '@afd/native';
import { buildStepPlan } from '@afd/shared';
import { makeModel } from '../../model/makeModel.js';
import { heldoutSequences, idsDigest, meanNll, tokenNll } from './heldoutPerplexity.js';

let dir: string;
let engine: Engine;
const vocab = 320;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'afd-ppl-'));
  await makeModel({ arch: 'qwen3_moe', preset: 'tiny', outDir: join(dir, 'm'), seed: 3, overrides: { vocab_size: vocab, bos_token_id: 0, eos_token_id: 1 } });
  engine = await Engine.load(join(dir, 'm'), { threads: 2, kvBlockSize: 16, numKvBlocks: 64 });
});
afterAll(async () => {
  engine?.close();
  await rm(dir, { recursive: true, force: true });
});

/** Scores by a fresh full prefill of every prefix (no KV-cache reuse): the transformers way. */
async function prefixNll(seq: readonly number[]): Promise<number[]> {
  const out: number[] = [];
  for (let k = 1; k < seq.length; k++) {
    const r = await engine.step(buildStepPlan([{ tokenIds: seq.slice(0, k), numCached: 0, blockTable: [60, 61, 62, 63] }], { returnLogits: true }));
    out.push(tokenNll(r.logits!, 0, vocab, seq[k]!));
  }
  return out;
}

describe('held-out perplexity on the engine', () => {
  it('cuts and prefixes documents like corpus_io, and digests them like ids_digest', () => {
    expect(heldoutSequences([[5, 6], Array.from({ length: 300 }, (_, i) => i)], 0, 256).map((s) => s.length)).toEqual([3, 257]);
    expect(heldoutSequences([[5, 6]], 0)[0]).toEqual([0, 5, 6]);
    // corpus_io.ids_digest([[1, 2], [3]]) in Python gives this value.
    expect(idsDigest([[1, 2], [3]])).toBe('03e9f88947d783d7ad9eeff19f452d8ad4ac9a7aa18829d82196f9cf41d2748f');
  });

  it('tokenNll is -log softmax', () => {
    const logits = new Float32Array([1, 2, 3, 0, 1000, 1001]);
    expect(tokenNll(logits, 0, 3, 2)).toBeCloseTo(Math.log(Math.exp(1) + Math.exp(2) + Math.exp(3)) - 3, 6);
    expect(tokenNll(logits, 3, 3, 2)).toBeCloseTo(Math.log(Math.exp(-1001) + Math.exp(-1) + 1), 6); // no overflow
  });

  it('teacher forcing through the KV cache, batched, equals full prefix scoring', async () => {
    const seqs = [
      [0, 17, 44, 91, 5, 230, 12, 7, 300, 2],
      [0, 3, 3, 3],
      [0, 250, 19, 81, 64, 64, 1],
    ];
    const want: number[] = [];
    for (const s of seqs) want.push(...(await prefixNll(s)));
    const expected = want.reduce((a, b) => a + b, 0) / want.length;
    for (const batchSeqs of [1, 2, 3]) {
      const got = await meanNll(engine, seqs, { batchSeqs });
      expect(got.tokens).toBe(want.length);
      expect(got.loss).toBeCloseTo(expected, 4);
    }
  });

  it('says how many KV blocks a batch needs when the engine has fewer', async () => {
    const long = Array.from({ length: 200 }, (_, i) => i % vocab);
    await expect(meanNll(engine, [long, long, long, long, long, long], { batchSeqs: 6 })).rejects.toThrow(/needs 78 KV blocks .* the engine has 64/);
  });
});
