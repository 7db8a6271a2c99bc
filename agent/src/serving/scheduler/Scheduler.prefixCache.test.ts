import { describe, expect, it } from 'vitest';
import { BlockManager } from '../kv/BlockManager.js';
import { KvContentEngine } from '../testing/kvContentEngine.js';
import { schedulerConfig, stepResult } from '../testing/schedulerSteps.js';
import { Scheduler, type SchedulerConfig } from './Scheduler.js';
import { Sequence, type SeqLogitOptions } from './Sequence.js';

const greedy = { temperature: 0, topK: 0, topP: 1, seed: 7 };
let arrival = 0;
function seq(id: string, prompt: number[], maxTokens = 4, opts: { salt?: string; logits?: SeqLogitOptions } = {}): Sequence {
  return new Sequence(id, prompt, greedy, { maxTokens, eosTokenIds: [], stopTokenIds: [], ignoreEos: true }, arrival++, opts.logits ?? {}, opts.salt);
}
const range = (n: number, from = 100): number[] => Array.from({ length: n }, (_, i) => from + i);

function cachingScheduler(numBlocks = 32, over: Partial<SchedulerConfig> = {}): Scheduler {
  return new Scheduler(schedulerConfig(over), new BlockManager(numBlocks, 4, { prefixCaching: true }));
}

/** Runs `s` until idle (fake results, or the KV-content engine). */
function drain(s: Scheduler, engine?: KvContentEngine): void {
  for (let i = 0; s.hasWork(); i++) {
    if (i > 5000) throw new Error('no progress');
    const step = s.schedule()!;
    s.update(step, engine ? engine.step(step) : stepResult(step.plan));
  }
}

describe('Scheduler with prefix caching', () => {
  it('a second request with the same prefix starts from the cached blocks and computes only its tail', () => {
    const s = cachingScheduler();
    const a = seq('a', range(10));
    s.add(a);
    drain(s);
    expect(a.numCachedPromptTokens).toBe(0);
    const b = seq('b', [...range(8), 7, 7, 7]); // shares a's first two blocks (8 tokens)
    s.add(b);
    const step = s.schedule()!;
    expect(step.entries[0]!.prefixLookup).toEqual({ queriedTokens: 11, hitTokens: 8 });
    expect([...step.plan.tokenIds]).toEqual([7, 7, 7]);
    expect([...step.plan.positions]).toEqual([8, 9, 10]);
    expect(b.numCachedPromptTokens).toBe(8);
    expect(s.promptSharing).toEqual({ numLookedUpTokens: 10 + 11, numSharedTokens: 8 });
    s.update(step, stepResult(step.plan));
    drain(s);
    expect(s.blocks.owners()).toEqual([]);
  });

  it('always computes the last prompt token (to sample from), also when every block is cached', () => {
    const s = cachingScheduler();
    s.add(seq('a', range(8), 1));
    drain(s);
    const b = seq('b', range(8));
    s.add(b);
    const step = s.schedule()!;
    expect(step.entries[0]!.prefixLookup!.hitTokens).toBe(4);
    expect([...step.plan.positions]).toEqual([4, 5, 6, 7]);
  });

  it('caches output tokens too: a conversation\'s next turn hits its previous answer', () => {
    const s = cachingScheduler();
    const turn1 = seq('t1', range(6), 6); // 6 prompt + 6 output: blocks 0-1 full and computed, the last token not computed
    s.add(turn1);
    drain(s);
    const history = [...turn1.promptIds, ...turn1.outputIds];
    const turn2 = seq('t2', [...history, 1, 2, 3]);
    s.add(turn2);
    const step = s.schedule()!;
    expect(step.entries[0]!.prefixLookup!.hitTokens).toBe(8);
  });

  it('a cache salt isolates: only the same salt hits', () => {
    const s = cachingScheduler();
    s.add(seq('a', range(9), 1, { salt: 'tenant-a' }));
    drain(s);
    for (const [salt, hit] of [['tenant-b', 0], [undefined, 0], ['tenant-a', 8]] as const) {
      const b = seq(`b-${salt}`, range(9), 1, salt ? { salt } : {});
      s.add(b);
      const step = s.schedule()!;
      expect(step.entries[0]!.prefixLookup!.hitTokens).toBe(hit);
      s.update(step, stepResult(step.plan));
      drain(s);
    }
  });

  it('a sequence that reports prompt logprobs computes its whole prompt', () => {
    const s = cachingScheduler();
    s.add(seq('a', range(9), 1));
    drain(s);
    const b = seq('b', range(9), 1, { logits: { promptLogprobs: 0 } });
    s.add(b);
    expect(s.schedule()!.entries[0]!.prefixLookup!.hitTokens).toBe(0);
  });

  it('without prefix caching nothing is looked up', () => {
    const s = new Scheduler(schedulerConfig(), new BlockManager(32, 4));
    s.add(seq('a', range(9), 1));
    drain(s);
    s.add(seq('b', range(9), 1));
    expect(s.schedule()!.entries[0]!.prefixLookup!.hitTokens).toBe(0);
  });

  it('a preempted sequence finds its own blocks again when readmitted', () => {
    // 6 blocks: two sequences of 9 prompt tokens (3 blocks each) fill the cache; growing preempts the newer.
    const s = cachingScheduler(6);
    const a = seq('a', range(9), 8);
    const b = seq('b', range(9, 500), 8);
    s.add(a);
    s.add(b);
    const engine = new KvContentEngine(6, 4);
    let readmitHit = -1;
    for (let i = 0; s.hasWork() && i < 200; i++) {
      const step = s.schedule()!;
      for (const e of step.entries) if (e.prefixLookup && e.seq.numPreemptions > 0) readmitHit = Math.max(readmitHit, e.prefixLookup.hitTokens);
      s.update(step, engine.step(step));
    }
    expect(s.numPreemptions).toBeGreaterThan(0);
    expect(readmitHit).toBeGreaterThan(0);
    expect(a.outputIds).toHaveLength(8);
    expect(b.outputIds).toHaveLength(8);
  });

  it('stress: overlapping prefixes, a tiny cache, preemptions and chunked prefill give the uncached outputs and never read a wrong block', () => {
    let rng = 12345;
    const rand = (n: number): number => {
      rng = (Math.imul(rng, 1103515245) + 12345) >>> 0;
      return (rng >>> 8) % n;
    };
    const systems = [range(13, 1000), range(7, 2000), range(21, 3000)];
    const requests = Array.from({ length: 60 }, (_, i) => {
      const sys = systems[rand(systems.length)]!;
      const user = Array.from({ length: 1 + rand(9) }, () => 10 + rand(5)); // few distinct tokens: user turns collide too
      return { id: `r${i}`, prompt: [...sys, ...user], maxTokens: 1 + rand(12) };
    });
    const run = (prefixCaching: boolean): { outputs: Map<string, number[]>; hits: number; computed: number; preemptions: number } => {
      const numBlocks = 20;
      const s = new Scheduler(schedulerConfig({ maxNumSeqs: 6, maxNumBatchedTokens: 24, longPrefillTokenThreshold: 8 }), new BlockManager(numBlocks, 4, { prefixCaching }));
      const engine = new KvContentEngine(numBlocks, 4);
      const seqs: Sequence[] = [];
      let next = 0;
      for (let i = 0; (s.hasWork() || next < requests.length) && i < 20000; i++) {
        // Arrivals interleave with steps: a few per step.
        for (let k = 0; k < 2 && next < requests.length; k++, next++) {
          const r = requests[next]!;
          const q = seq(r.id, r.prompt, r.maxTokens);
          seqs.push(q);
          s.add(q);
        }
        const step = s.schedule();
        if (step) s.update(step, engine.step(step));
      }
      expect(s.hasWork()).toBe(false);
      expect(s.blocks.owners()).toEqual([]);
      expect(s.blocks.numFreeBlocks).toBe(numBlocks);
      return { outputs: new Map(seqs.map((q) => [q.id, q.outputIds])), hits: s.promptSharing.numSharedTokens, computed: engine.numComputedTokens, preemptions: s.numPreemptions };
    };
    const off = run(false);
    const on = run(true);
    expect(on.outputs).toEqual(off.outputs);
    expect(off.hits).toBe(0);
    expect(on.hits).toBeGreaterThan(200);
    expect(on.preemptions).toBeGreaterThan(0);
    expect(on.computed).toBeLessThan(off.computed - 200);
  });
});
