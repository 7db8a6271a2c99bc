/**
 * Held-out perplexity with our engine, scored exactly as tools/demo-model/train.py scores
 * it with transformers: each held-out document is [<|endoftext|>] + its tokens, cut to
 * 257 tokens, and every next token is predicted. The engine returns last-position logits
 * only, so documents advance together one token per step (teacher forcing through the KV
 * cache), a batch of them per step.
 */
import { createHash } from 'node:crypto';
import type { Engine } from '@afd/native';
import { buildStepPlan, type PlanSeq } from '@afd/shared';

/** Same as corpus_io.HELDOUT_MAX_TOKENS. */
export const heldoutMaxTokens = 256;

/** corpus_io.heldout sequences: [eot] + ids, at most maxTokens + 1 long. */
export function heldoutSequences(docs: readonly (readonly number[])[], eotId: number, maxTokens = heldoutMaxTokens): number[][] {
  return docs.map((ids) => [eotId, ...ids].slice(0, maxTokens + 1));
}

/** corpus_io.ids_digest: sha256 over "id,id,...\n" per sequence. */
export function idsDigest(sequences: readonly (readonly number[])[]): string {
  const h = createHash('sha256');
  for (const s of sequences) h.update(`${s.join(',')}\n`, 'ascii');
  return h.digest('hex');
}

/** -log softmax(row)[target], in double precision. */
export function tokenNll(logits: Float32Array, offset: number, vocab: number, target: number): number {
  let max = -Infinity;
  for (let v = 0; v < vocab; v++) max = Math.max(max, logits[offset + v]!);
  let sum = 0;
  for (let v = 0; v < vocab; v++) sum += Math.exp(logits[offset + v]! - max);
  return Math.log(sum) + max - logits[offset + target]!;
}

export interface NllResult {
  /** Mean negative log-likelihood, nats per predicted token. */
  loss: number;
  tokens: number;
}

/**
 * Mean next-token NLL of `sequences` (each at least 2 tokens). The engine needs
 * batchSeqs * ceil(longest / kvBlockSize) KV blocks.
 */
export async function meanNll(
  engine: Engine,
  sequences: readonly (readonly number[])[],
  opts: { batchSeqs: number; onBatch?: (done: number, total: number) => void },
): Promise<NllResult> {
  const { vocabSize, kvBlockSize, numKvBlocks } = engine.info;
  const order = sequences.map((_, i) => i).sort((a, b) => sequences[b]!.length - sequences[a]!.length);
  let total = 0;
  let count = 0;
  for (let start = 0; start < order.length; start += opts.batchSeqs) {
    const batch = order.slice(start, start + opts.batchSeqs).map((i) => sequences[i]!);
    const longest = batch[0]!.length;
    const blocksPerSeq = Math.ceil(longest / kvBlockSize);
    if (batch.length * blocksPerSeq > numKvBlocks) {
      throw new Error(`held-out scoring needs ${batch.length * blocksPerSeq} KV blocks (${batch.length} documents of up to ${longest} tokens), the engine has ${numKvBlocks}`);
    }
    const tables = batch.map((_, j) => Array.from({ length: blocksPerSeq }, (_, b) => j * blocksPerSeq + b));
    for (let t = 0; t + 1 < longest; t++) {
      const active = batch.map((s, j) => ({ s, j })).filter(({ s }) => s.length > t + 1);
      const seqs: PlanSeq[] = active.map(({ s, j }) => ({ tokenIds: [s[t]!], numCached: t, blockTable: tables[j]! }));
      const out = await engine.step(buildStepPlan(seqs, { returnLogits: true }));
      if (!out.logits || out.logits.length !== active.length * vocabSize) throw new Error(`the engine returned ${out.logits?.length ?? 0} logits for ${active.length} sequences`);
      active.forEach(({ s }, k) => {
        total += tokenNll(out.logits!, k * vocabSize, vocabSize, s[t + 1]!);
        count += 1;
      });
    }
    opts.onBatch?.(Math.min(start + opts.batchSeqs, order.length), order.length);
  }
  return { loss: total / count, tokens: count };
}
