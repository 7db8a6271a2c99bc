import { describe, expect, it } from 'vitest';
import { checkStepPlan } from '@afd/shared';
import { BlockManager } from '../kv/BlockManager.js';
import { Scheduler } from './Scheduler.js';
import { blockRows, schedulerConfig, stepResult } from '../testing/schedulerSteps.js';
import { Sequence } from './Sequence.js';

const greedy = { temperature: 0, topK: 0, topP: 1, seed: 7 };
let arrival = 0;
function seq(id: string, promptLen: number, maxTokens = 8, eos: number[] = [999]): Sequence {
  const prompt = Array.from({ length: promptLen }, (_, i) => 100 + i);
  return new Sequence(id, prompt, greedy, { maxTokens, eosTokenIds: eos, stopTokenIds: [], ignoreEos: false }, arrival++);
}
describe('Scheduler', () => {
  it('prefills a prompt then decodes one token per step with exact plans', () => {
    const s = new Scheduler(schedulerConfig(), new BlockManager(16, 4));
    const a = seq('a', 6, 3);
    s.add(a);
    const step1 = s.schedule()!;
    const p = step1.plan;
    expect(p.numSeqs).toBe(1);
    expect([...p.tokenIds]).toEqual([100, 101, 102, 103, 104, 105]);
    expect([...p.positions]).toEqual([0, 1, 2, 3, 4, 5]);
    expect([...p.tokenOffsets]).toEqual([0, 6]);
    expect([...p.contextLens]).toEqual([6]);
    expect(blockRows(p)).toEqual([[0, 1]]);
    expect([...p.sampleMask]).toEqual([1]);
    expect(p.stageSplit).toBe(1);
    const out = s.update(step1, stepResult(p, 42));
    expect(out.map((o) => [o.tokenId, o.finishReason])).toEqual([[42, null]]);

    const step2 = s.schedule()!;
    expect([...step2.plan.tokenIds]).toEqual([42]);
    expect([...step2.plan.positions]).toEqual([6]);
    expect([...step2.plan.contextLens]).toEqual([7]);
    s.update(step2, stepResult(step2.plan, 43));
    const step3 = s.schedule()!;
    expect([...step3.plan.positions]).toEqual([7]);
    expect(blockRows(step3.plan)).toEqual([[0, 1]]);
    const last = s.update(step3, stepResult(step3.plan, 44));
    expect(last[0]!.finishReason).toBe('length');
    expect(a.outputIds).toEqual([42, 43, 44]);
    expect(s.blocks.numFreeBlocks).toBe(16);
    expect(s.hasWork()).toBe(false);
    expect(s.schedule()).toBeNull();
  });

  it('finishes on EOS and on a stop token id; ignoreEos keeps going', () => {
    const s = new Scheduler(schedulerConfig(), new BlockManager(16, 4));
    const a = seq('a', 2, 10, [7]);
    const b = new Sequence('b', [1, 2], greedy, { maxTokens: 10, eosTokenIds: [7], stopTokenIds: [9], ignoreEos: true }, arrival++);
    s.add(a);
    s.add(b);
    let step = s.schedule()!;
    let out = s.update(step, stepResult(step.plan, 7));
    expect(out.map((o) => o.finishReason)).toEqual(['stop', null]);
    step = s.schedule()!;
    out = s.update(step, stepResult(step.plan, 9));
    expect(out.map((o) => [o.seq.id, o.finishReason])).toEqual([['b', 'stop']]);
    expect(s.blocks.owners()).toEqual([]);
  });

  it('chunks a long prompt and schedules decodes first so they are not starved', () => {
    const s = new Scheduler(schedulerConfig({ maxNumBatchedTokens: 8 }), new BlockManager(64, 4));
    const d = seq('d', 3, 50);
    s.add(d);
    let step = s.schedule()!;
    s.update(step, stepResult(step.plan));
    const long = seq('long', 20, 4);
    s.add(long);
    step = s.schedule()!;
    // decode of d (1 token) first, then the first 7-token chunk of the long prompt.
    expect(step.entries.map((e) => [e.seq.id, e.numNewTokens, e.sample])).toEqual([
      ['d', 1, true],
      ['long', 7, false],
    ]);
    expect([...step.plan.tokenOffsets]).toEqual([0, 1, 8]);
    expect([...step.plan.sampleMask]).toEqual([1, 0]);
    expect(s.update(step, stepResult(step.plan)).map((o) => o.seq.id)).toEqual(['d']);
    step = s.schedule()!;
    expect(step.entries.map((e) => [e.seq.id, e.numNewTokens])).toEqual([
      ['d', 1],
      ['long', 7],
    ]);
    expect([...step.plan.positions.subarray(1)]).toEqual([7, 8, 9, 10, 11, 12, 13]);
    s.update(step, stepResult(step.plan));
    step = s.schedule()!;
    expect(step.entries.map((e) => [e.seq.id, e.numNewTokens, e.sample])).toEqual([
      ['d', 1, true],
      ['long', 6, true],
    ]);
    expect(s.update(step, stepResult(step.plan)).map((o) => o.seq.id)).toEqual(['d', 'long']);
  });

  it('caps one sequence chunk with longPrefillTokenThreshold and respects maxNumSeqs', () => {
    const s = new Scheduler(schedulerConfig({ maxNumBatchedTokens: 100, longPrefillTokenThreshold: 10, maxNumSeqs: 2 }), new BlockManager(64, 4));
    s.add(seq('a', 30));
    s.add(seq('b', 5));
    s.add(seq('c', 5));
    const step = s.schedule()!;
    expect(step.entries.map((e) => [e.seq.id, e.numNewTokens])).toEqual([
      ['a', 10],
      ['b', 5],
    ]);
    expect(s.numWaiting).toBe(1);
  });

  it('preempts the newest sequence when blocks run out, recomputes it, and frees everything at the end', () => {
    // 4 blocks of 2 tokens: a and b each start with 3 tokens (2 blocks), total 4 blocks.
    const bm = new BlockManager(4, 2);
    const s = new Scheduler(schedulerConfig(), bm);
    const a = seq('a', 3, 4);
    const b = seq('b', 3, 4);
    s.add(a);
    s.add(b);
    let step = s.schedule()!;
    expect(blockRows(step.plan)).toEqual([
      [0, 1],
      [2, 3],
    ]);
    s.update(step, stepResult(step.plan, 11)); // both now have 4 tokens, 3 computed
    // Decode: position 3 still fits in block 1 / block 3.
    step = s.schedule()!;
    expect(step.entries.map((e) => e.seq.id)).toEqual(['a', 'b']);
    s.update(step, stepResult(step.plan, 12)); // 5 tokens, 4 computed: next decode at position 4 needs a 3rd block
    step = s.schedule()!;
    // a needs a block, none free: b (newest) is preempted and a gets b's first freed block.
    expect(step.entries.map((e) => e.seq.id)).toEqual(['a']);
    expect(blockRows(step.plan)).toEqual([[0, 1, 2]]);
    expect(b.status).toBe('waiting');
    expect(b.numComputedTokens).toBe(0);
    expect(s.numPreemptions).toBe(1);
    s.update(step, stepResult(step.plan, 13));
    step = s.schedule()!; // a decodes at position 5 (block 2); b waits: 5 tokens need 3 blocks, 1 free
    expect(step.entries.map((e) => e.seq.id)).toEqual(['a']);
    const out = s.update(step, stepResult(step.plan, 14));
    expect(out[0]!.finishReason).toBe('length');
    // b is recomputed: its whole prompt + 2 generated tokens are prefilled again, then it samples.
    step = s.schedule()!;
    expect(step.entries.map((e) => [e.seq.id, e.numNewTokens, e.sample])).toEqual([['b', 5, true]]);
    expect([...step.plan.tokenIds]).toEqual([100, 101, 102, 11, 12]);
    while (s.hasWork()) {
      s.update(step, stepResult(step.plan, 15));
      if (!s.hasWork()) break;
      step = s.schedule()!;
    }
    expect(b.outputIds).toEqual([11, 12, 15, 15]);
    expect(bm.numFreeBlocks).toBe(4);
  });

  it('takes a newer sequence back out of the step rather than preempting an older one', () => {
    // 3 blocks of 2 tokens; prompt chunks of at most 2 tokens.
    const bm = new BlockManager(3, 2);
    const s = new Scheduler(schedulerConfig({ longPrefillTokenThreshold: 2 }), bm);
    const old = seq('old', 5, 1); // 5 + 1 tokens: exactly the 3 blocks
    s.add(old);
    let step = s.schedule()!; // old: positions 0-1 in block 0
    s.update(step, stepResult(step.plan));
    const young = seq('young', 1, 4);
    s.add(young);
    step = s.schedule()!; // old: positions 2-3 (block 1); young: its prompt (block 2)
    expect(blockRows(step.plan)).toEqual([[0, 1], [2, 0]]);
    s.update(step, stepResult(step.plan));
    // young decodes first (position 1, block 2); old's next chunk needs a block and none is
    // free: young is taken back out of the step and preempted, old gets block 2.
    step = s.schedule()!;
    expect(step.entries.map((e) => [e.seq.id, e.numNewTokens])).toEqual([['old', 1]]);
    expect(blockRows(step.plan)).toEqual([[0, 1, 2]]);
    expect(young.status).toBe('waiting');
    expect(young.outputIds).toHaveLength(1); // kept, recomputed later
    expect(s.numPreemptions).toBe(1);
    for (let i = 0; s.hasWork(); i++) {
      if (i > 50) throw new Error('no progress');
      s.update(step, stepResult(step.plan));
      if (!s.hasWork()) break;
      step = s.schedule()!;
    }
    expect(old.finishReason).toBe('length');
    expect(young.outputIds).toHaveLength(4);
    expect(bm.numFreeBlocks).toBe(3);
  });

  it('never fails requests that fit even under heavy memory pressure', () => {
    const bm = new BlockManager(10, 4); // 40 token slots
    const s = new Scheduler(schedulerConfig({ maxNumBatchedTokens: 16 }), bm);
    const all: Sequence[] = [];
    for (let i = 0; i < 12; i++) {
      const q = seq(`r${i}`, 5 + (i % 7), 10 + (i % 5));
      all.push(q);
      s.add(q);
    }
    let steps = 0;
    while (s.hasWork()) {
      const step = s.schedule();
      expect(step).not.toBeNull();
      // Every block table fits the cache it was drawn from (the engine's check with its limits).
      expect(checkStepPlan(step!.plan, { vocabSize: 1000, kvBlockSize: 4, numKvBlocks: 10 })).toEqual([]);
      s.update(step!, stepResult(step!.plan, 3));
      if (++steps > 2000) throw new Error('no progress');
    }
    for (const q of all) {
      expect(q.finishReason).toBe('length');
      expect(q.outputIds.length).toBe(q.stop.maxTokens);
    }
    expect(s.numPreemptions).toBeGreaterThan(0);
    expect(bm.numFreeBlocks).toBe(10);
  });

  it('frees an aborted sequence right away, or after the step that covers it', () => {
    const bm = new BlockManager(8, 4);
    const s = new Scheduler(schedulerConfig(), bm);
    const a = seq('a', 4);
    const b = seq('b', 4);
    s.add(a);
    s.add(b);
    const step = s.schedule()!;
    s.finish(a, 'abort');
    expect(bm.owners().sort()).toEqual(['a', 'b']); // a is in the in-flight step
    const out = s.update(step, stepResult(step.plan));
    expect(out.map((o) => o.seq.id)).toEqual(['b']);
    expect(bm.owners()).toEqual(['b']);
    s.finish(b, 'abort');
    expect(bm.owners()).toEqual([]);
    const c = seq('c', 4);
    s.add(c);
    s.finish(c, 'abort'); // still waiting
    expect(s.hasWork()).toBe(false);
  });

  it('sets a DBO stage split when the batch passes the thresholds', () => {
    const dbo = { enabled: true, decodeTokenThreshold: 4, prefillTokenThreshold: 10 };
    const s = new Scheduler(schedulerConfig({ dbo }), new BlockManager(64, 4));
    for (let i = 0; i < 4; i++) s.add(seq(`p${i}`, 3));
    let step = s.schedule()!;
    // 12 prefill tokens >= 10: split 6 / 6.
    expect(step.plan.stageSplit).toBe(2);
    s.update(step, stepResult(step.plan));
    step = s.schedule()!;
    // 4 decode tokens >= 4: split 2 / 2.
    expect(step.plan.stageSplit).toBe(2);
    s.update(step, stepResult(step.plan));

    const off = new Scheduler(schedulerConfig({ dbo: { ...dbo, decodeTokenThreshold: 5 } }), new BlockManager(64, 4));
    for (let i = 0; i < 4; i++) off.add(seq(`q${i}`, 1));
    step = off.schedule()!;
    expect(step.plan.stageSplit).toBe(4); // 4 prefill tokens < 10
  });

  it('refuses a sequence that could never fit the KV cache', () => {
    const s = new Scheduler(schedulerConfig(), new BlockManager(2, 4));
    expect(() => s.add(seq('big', 6, 3))).toThrow(/may grow to 9 tokens, more than the 8/);
  });

  it('refuses to schedule twice without an update', () => {
    const s = new Scheduler(schedulerConfig(), new BlockManager(8, 4));
    s.add(seq('a', 2));
    s.schedule();
    expect(() => s.schedule()).toThrow(/not been updated/);
  });
});
