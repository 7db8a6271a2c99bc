/**
 * The Scheduler for a model with linear-attention (gdn) layers (numStateSlots > 0): every
 * running sequence holds one recurrent-state slot, from its admission to its end or
 * preemption; nothing reuses KV (no prefix hits, no prompt blocks shared by samples).
 */
import { describe, expect, it } from 'vitest';
import { checkStepPlan } from '@afd/shared';
import { BlockManager } from '../kv/BlockManager.js';
import { blockRows, schedulerConfig, stepResult } from '../testing/schedulerSteps.js';
import { Scheduler, type ScheduledStep, type SchedulerConfig } from './Scheduler.js';
import { Sequence } from './Sequence.js';

let arrival = 0;
const stop = (maxTokens: number): Sequence['stop'] => ({ maxTokens, eosTokenIds: [999], stopTokenIds: [], ignoreEos: false });
const promptOf = (len: number): number[] => Array.from({ length: len }, (_, i) => 100 + i);
function seq(id: string, promptLen: number, maxTokens = 4): Sequence {
  return new Sequence(id, promptOf(promptLen), { temperature: 0, topK: 0, topP: 1, seed: 1 }, stop(maxTokens), arrival++);
}
function samples(id: string, n: number, promptLen: number, maxTokens: number): Sequence[] {
  const prompt = promptOf(promptLen);
  return Array.from({ length: n }, (_, i) => new Sequence(`${id}${i}`, prompt, { temperature: 1, topK: 0, topP: 1, seed: 7 + i }, stop(maxTokens), arrival++));
}
function stateScheduler(numBlocks: number, over: Partial<SchedulerConfig> = {}, numStateSlots = 8): Scheduler {
  return new Scheduler(schedulerConfig({ numStateSlots, ...over }), new BlockManager(numBlocks, 4));
}
/** `id@numCached+numNew:slot` of every entry. */
const shape = (step: ScheduledStep): string[] => step.entries.map((e) => `${e.seq.id}@${e.seq.numComputedTokens}+${e.numNewTokens}:${e.seq.stateSlot}`);

/**
 * What a gdn engine's slots hold: per slot, the sequence whose state it is and how many of
 * its tokens it has seen. A step whose first position for s is 0 starts s afresh; any other
 * must find s's own state after exactly that many tokens (the contract of StepPlan.stateSlots).
 */
class SlotStates {
  private readonly held = new Map<number, { id: string; numTokens: number }>();
  constructor(private readonly numStateSlots: number) {}

  step(step: ScheduledStep): void {
    const { plan } = step;
    expect(checkStepPlan(plan, { vocabSize: 1000, kvBlockSize: 4, numKvBlocks: 1 << 20, numStateSlots: this.numStateSlots })).toEqual([]);
    step.entries.forEach((e, i) => {
      const slot = plan.stateSlots![i]!;
      const first = plan.positions[plan.tokenOffsets[i]!]!;
      if (first > 0) expect(this.held.get(slot), `${e.seq.id} continues at ${first} in slot ${slot}`).toEqual({ id: e.seq.id, numTokens: first });
      this.held.set(slot, { id: e.seq.id, numTokens: plan.contextLens[i]! });
    });
  }
}

/** Runs `s` until idle, checking slot states and the pool every step; returns the steps run. */
function drain(s: Scheduler, states: SlotStates, tok = 5): number {
  let steps = 0;
  while (s.hasWork()) {
    if (++steps > 5000) throw new Error('no progress');
    const step = s.schedule()!;
    expect(s.stateSlots!.numTaken).toBe(s.numRunning);
    expect(s.stateSlots!.numTaken).toBeLessThanOrEqual(s.config.maxNumSeqs);
    states.step(step);
    s.update(step, stepResult(step.plan, tok));
  }
  return steps;
}

describe('Scheduler with recurrent-state slots (numStateSlots > 0)', () => {
  it('refuses maxNumSeqs above numStateSlots, naming both, and prefix caching', () => {
    expect(() => new Scheduler(schedulerConfig({ maxNumSeqs: 9, numStateSlots: 8 }), new BlockManager(16, 4))).toThrow(
      'Scheduler: maxNumSeqs 9 is more than the engine\'s 8 recurrent-state slots (numStateSlots)',
    );
    expect(() => new Scheduler(schedulerConfig({ numStateSlots: 8 }), new BlockManager(16, 4, { prefixCaching: true }))).toThrow(/prefix caching must be off .*per-sequence recurrent state that KV blocks do not hold/);
    expect(new Scheduler(schedulerConfig({ maxNumSeqs: 8, numStateSlots: 8 }), new BlockManager(16, 4)).stateSlots!.limit).toBe(8);
    expect(new Scheduler(schedulerConfig({ numStateSlots: 0 }), new BlockManager(16, 4, { prefixCaching: true })).stateSlots).toBeNull();
  });

  it('gives each sequence a slot when admitted, carries it in every plan, and takes it back when it finishes', () => {
    const s = stateScheduler(16);
    const a = seq('a', 6, 2);
    const b = seq('b', 3, 4);
    s.add(a);
    s.add(b);
    let step = s.schedule()!;
    expect(shape(step)).toEqual(['a@0+6:0', 'b@0+3:1']);
    expect([...step.plan.stateSlots!]).toEqual([0, 1]);
    expect(s.stateSlots!.numTaken).toBe(2);
    s.update(step, stepResult(step.plan));
    step = s.schedule()!;
    expect([...step.plan.stateSlots!]).toEqual([0, 1]);
    expect(s.update(step, stepResult(step.plan)).map((o) => [o.seq.id, o.finishReason])).toEqual([
      ['a', 'length'],
      ['b', null],
    ]);
    expect(a.stateSlot).toBeNull();
    expect(s.stateSlots!.numTaken).toBe(1);
    // A newcomer gets the lowest free slot: a's.
    const c = seq('c', 2, 1);
    s.add(c);
    step = s.schedule()!;
    expect(shape(step)).toEqual(['b@4+1:1', 'c@0+2:0']);
    s.update(step, stepResult(step.plan));
    expect(c.stateSlot).toBeNull();
  });

  it('plans without state slots when numStateSlots is 0', () => {
    const s = new Scheduler(schedulerConfig(), new BlockManager(16, 4));
    s.add(seq('a', 3));
    const step = s.schedule()!;
    expect(step.plan.stateSlots).toBeUndefined();
    expect(step.entries[0]!.seq.stateSlot).toBeNull();
  });

  it('takes the slot back on an abort (after the step it runs in, which may still write it) and on a failed step', () => {
    const s = stateScheduler(16);
    const a = seq('a', 4);
    const b = seq('b', 4);
    const c = seq('c', 4);
    s.add(a);
    s.add(b);
    s.add(c);
    let step = s.schedule()!;
    expect(s.stateSlots!.numTaken).toBe(3);
    s.finish(a, 'abort'); // in the in-flight step: that step still writes its slot
    expect(a.stateSlot).toBe(0);
    expect(s.stateSlots!.numTaken).toBe(3);
    s.update(step, stepResult(step.plan));
    expect(a.stateSlot).toBeNull();
    expect(s.stateSlots!.numTaken).toBe(2);
    step = s.schedule()!;
    expect(shape(step)).toEqual(['b@4+1:1', 'c@4+1:2']);
    expect(s.failStep(step).map((q) => q.id)).toEqual(['b', 'c']);
    expect(s.stateSlots!.numTaken).toBe(0);
    expect(s.blocks.owners()).toEqual([]);
    const d = seq('d', 2);
    s.add(d);
    s.finish(d, 'abort'); // waiting: never held one
    expect(s.stateSlots!.numTaken).toBe(0);
  });

  it('a preempted sequence gives its slot back and restarts from position 0 with a slot', () => {
    // 4 blocks of 2 tokens: a and b each start with 3 tokens (2 blocks); a's third block preempts b.
    const s = new Scheduler(schedulerConfig({ numStateSlots: 8 }), new BlockManager(4, 2));
    const states = new SlotStates(8);
    const a = seq('a', 3, 4);
    const b = seq('b', 3, 4);
    s.add(a);
    s.add(b);
    let step = s.schedule()!;
    expect(shape(step)).toEqual(['a@0+3:0', 'b@0+3:1']);
    states.step(step);
    s.update(step, stepResult(step.plan, 11));
    step = s.schedule()!;
    states.step(step);
    s.update(step, stepResult(step.plan, 12));
    step = s.schedule()!; // a needs a third block: b is preempted
    expect(shape(step)).toEqual(['a@4+1:0']);
    expect(b.status).toBe('waiting');
    expect(b.stateSlot).toBeNull();
    expect(s.stateSlots!.numTaken).toBe(1);
    states.step(step);
    s.update(step, stepResult(step.plan, 13));
    step = s.schedule()!;
    states.step(step);
    s.update(step, stepResult(step.plan, 14)); // a ends
    step = s.schedule()!;
    // b restarts at position 0 (prompt + its 2 tokens), in the lowest free slot.
    expect(shape(step)).toEqual(['b@0+5:0']);
    expect([...step.plan.positions]).toEqual([0, 1, 2, 3, 4]);
    expect([...step.plan.tokenIds]).toEqual([100, 101, 102, 11, 12]);
    states.step(step);
    s.update(step, stepResult(step.plan, 15));
    drain(s, states);
    expect(b.outputIds).toEqual([11, 12, 15, 5]);
    expect(s.stateSlots!.numTaken).toBe(0);
  });

  it('the n samples of one prompt share no prompt blocks: each prefills its whole prompt', () => {
    const s = stateScheduler(32);
    const g = samples('g', 3, 10, 2); // 10 prompt tokens: 2 full blocks that samples would share
    s.addSamples(g);
    const step = s.schedule()!;
    expect(shape(step)).toEqual(['g0@0+10:0', 'g1@0+10:1', 'g2@0+10:2']);
    expect(blockRows(step.plan)).toEqual([
      [0, 1, 2],
      [3, 4, 5],
      [6, 7, 8],
    ]);
    expect(step.entries.map((e) => e.prefixLookup)).toEqual(Array(3).fill({ queriedTokens: 10, hitTokens: 0 }));
    const states = new SlotStates(8);
    states.step(step);
    s.update(step, stepResult(step.plan));
    drain(s, states);
    expect(s.promptSharing.numSharedTokens).toBe(0);
    expect(g.map((q) => q.numCachedPromptTokens)).toEqual([0, 0, 0]);
    expect(s.blocks.owners()).toEqual([]);
  });

  it('finds no prefix hits: a repeated prompt is computed in full', () => {
    const s = stateScheduler(32);
    const states = new SlotStates(8);
    const first = seq('first', 13, 2);
    s.add(first);
    drain(s, states);
    const again = seq('again', 13, 2);
    s.add(again);
    const step = s.schedule()!;
    expect(shape(step)).toEqual(['again@0+13:0']);
    expect(step.entries[0]!.prefixLookup).toEqual({ queriedTokens: 13, hitTokens: 0 });
    states.step(step);
    s.update(step, stepResult(step.plan));
    drain(s, states);
    expect(s.promptSharing.numSharedTokens).toBe(0);
    expect(s.blocks.prefixCaching).toBe(false);
  });

  it('under memory pressure with samples, chunked prefill and preemptions: slots stay consistent, never exceed maxNumSeqs, and all come back', () => {
    const maxNumSeqs = 5;
    const s = new Scheduler(schedulerConfig({ maxNumSeqs, numStateSlots: maxNumSeqs, maxNumBatchedTokens: 16, longPrefillTokenThreshold: 6 }), new BlockManager(12, 4));
    const states = new SlotStates(maxNumSeqs);
    const all: Sequence[] = [];
    for (let i = 0; i < 10; i++) {
      const group = i % 3 === 0 ? samples(`g${i}-`, 2, 5 + i, 3 + (i % 4)) : [seq(`r${i}`, 4 + (i % 6), 5 + (i % 5))];
      all.push(...group);
      s.addSamples(group);
    }
    drain(s, states, 3);
    for (const q of all) {
      expect(q.finishReason).toBe('length');
      expect(q.stateSlot).toBeNull();
    }
    expect(s.numPreemptions).toBeGreaterThan(0);
    expect(s.stateSlots!.numTaken).toBe(0);
    expect(s.blocks.owners()).toEqual([]);
  });
});
