/**
 * The n samples of one prompt through the Scheduler: one prefill of the shared blocks, each
 * sample's tail in a block of its own, preemption, early finishes, and no leaked block.
 */
import { describe, expect, it } from 'vitest';
import type { StepPlan } from '@afd/shared';
import { BlockManager } from '../kv/BlockManager.js';
import { blockRows, runToEnd, schedulerConfig, stepResult } from '../testing/schedulerSteps.js';
import { PromptGroup } from './PromptGroup.js';
import { Scheduler, type ScheduledStep } from './Scheduler.js';
import { Sequence } from './Sequence.js';

let arrival = 0;
const stop = (maxTokens: number): Sequence['stop'] => ({ maxTokens, eosTokenIds: [999], stopTokenIds: [], ignoreEos: false });
const promptOf = (len: number): number[] => Array.from({ length: len }, (_, i) => 100 + i);

/** n samples `${id}0`.. of one prompt, seeds 7, 8, ... (what ServingEngine gives seed 7). */
function samples(id: string, n: number, promptLen: number, maxTokens: number): Sequence[] {
  const prompt = promptOf(promptLen);
  return Array.from({ length: n }, (_, i) => new Sequence(`${id}${i}`, prompt, { temperature: 1, topK: 0, topP: 1, seed: 7 + i }, stop(maxTokens), arrival++));
}
function single(id: string, promptLen: number, maxTokens: number): Sequence {
  return new Sequence(id, promptOf(promptLen), { temperature: 0, topK: 0, topP: 1, seed: 1 }, stop(maxTokens), arrival++);
}
/** `id@numCached+numNew` of every entry, `s` when it samples. */
const shape = (step: ScheduledStep): string[] => step.entries.map((e) => `${e.seq.id}@${e.seq.numComputedTokens}+${e.numNewTokens}${e.sample ? 's' : ''}`);
const positionsOf = (plan: StepPlan, i: number): number[] => [...plan.positions.subarray(plan.tokenOffsets[i]!, plan.tokenOffsets[i + 1]!)];

/** Runs every step, recording each entry's shape; returns them step by step. */
function runRecording(s: Scheduler, tok = 5): string[][] {
  const steps: string[][] = [];
  while (s.hasWork()) {
    if (steps.length > 500) throw new Error('no progress');
    const step = s.schedule()!;
    steps.push(shape(step));
    s.update(step, stepResult(step.plan, tok));
  }
  return steps;
}

describe('Scheduler with the n samples of one prompt', () => {
  it('prefills the prompt once; the samples share its full blocks and compute only the tail', () => {
    const bm = new BlockManager(16, 4);
    const s = new Scheduler(schedulerConfig(), bm);
    const g = samples('g', 4, 10, 3); // 10 prompt tokens: 2 full blocks (8 tokens) shared
    s.addSamples(g);
    const step1 = s.schedule()!;
    expect(shape(step1)).toEqual(['g0@0+10s']);
    expect(blockRows(step1.plan)).toEqual([[0, 1, 2]]);
    expect(s.numWaiting).toBe(3); // the samples wait for the shared blocks
    s.update(step1, stepResult(step1.plan, 42));

    const step2 = s.schedule()!;
    const p = step2.plan;
    expect(shape(step2)).toEqual(['g0@10+1s', 'g1@8+2s', 'g2@8+2s', 'g3@8+2s']);
    expect(blockRows(p)).toEqual([
      [0, 1, 2],
      [0, 1, 3],
      [0, 1, 4],
      [0, 1, 5],
    ]);
    expect([1, 2, 3].map((i) => positionsOf(p, i))).toEqual([[8, 9], [8, 9], [8, 9]]);
    expect([...p.tokenIds]).toEqual([42, 108, 109, 108, 109, 108, 109]);
    expect([...p.contextLens]).toEqual([11, 10, 10, 10]);
    expect([...p.seeds]).toEqual([7, 8, 9, 10]);
    expect(bm.numUsedBlocks).toBe(6); // the prompt's 2 full blocks count once
    expect(bm.numSharedBlocks).toBe(2);
    expect(s.promptSharing).toEqual({ numLookedUpTokens: 40, numSharedTokens: 24 });

    s.update(step2, stepResult(p, 43));
    runToEnd(s);
    for (const q of g) expect(q.outputIds).toHaveLength(3);
    expect(bm.owners()).toEqual([]);
    expect(bm.numFreeBlocks).toBe(16);
  });

  it('shares as soon as a chunked prefill has written the shared blocks', () => {
    const s = new Scheduler(schedulerConfig({ longPrefillTokenThreshold: 4 }), new BlockManager(16, 4));
    s.addSamples(samples('g', 3, 10, 2));
    const steps = runRecording(s);
    expect(steps.slice(0, 3)).toEqual([['g0@0+4'], ['g0@4+4'], ['g0@8+2s', 'g1@8+2s', 'g2@8+2s']]);
    expect(s.blocks.owners()).toEqual([]);
  });

  it('a prompt without a full block before its last token is not shared', () => {
    const s = new Scheduler(schedulerConfig(), new BlockManager(16, 4));
    s.addSamples(samples('g', 3, 4, 2));
    const step = s.schedule()!;
    expect(shape(step)).toEqual(['g0@0+4s', 'g1@0+4s', 'g2@0+4s']);
    expect(blockRows(step.plan)).toEqual([[0], [1], [2]]);
    expect(new PromptGroup(samples('h', 2, 17, 1), 16).numSharedTokens).toBe(16);
    expect(new PromptGroup(samples('h', 2, 16, 1), 16).numSharedTokens).toBe(0);
  });

  it('other requests are not held up by samples waiting for their shared blocks', () => {
    const s = new Scheduler(schedulerConfig({ longPrefillTokenThreshold: 4 }), new BlockManager(16, 4));
    s.addSamples(samples('g', 2, 10, 1));
    s.add(single('x', 3, 1));
    expect(shape(s.schedule()!)).toEqual(['g0@0+4', 'x@0+3s']);
  });

  it('when the leader is aborted mid-prefill, the next sample prefills and the others share from it', () => {
    const s = new Scheduler(schedulerConfig({ longPrefillTokenThreshold: 4 }), new BlockManager(16, 4));
    const g = samples('g', 3, 10, 2);
    s.addSamples(g);
    const step = s.schedule()!;
    s.update(step, stepResult(step.plan));
    s.finish(g[0]!, 'abort');
    const steps = runRecording(s);
    expect(steps.slice(0, 3)).toEqual([['g1@0+4'], ['g1@4+4'], ['g1@8+2s', 'g2@8+2s']]);
    expect(s.blocks.owners()).toEqual([]);
  });

  it('a leader that finishes at its first token leaves the shared blocks to the waiting samples for one step', () => {
    const bm = new BlockManager(16, 4);
    const s = new Scheduler(schedulerConfig(), bm);
    s.addSamples(samples('g', 3, 10, 1)); // max_tokens 1: the leader ends as its prefill ends
    let step = s.schedule()!;
    expect(s.update(step, stepResult(step.plan)).map((o) => o.finishReason)).toEqual(['length']);
    expect(bm.owners()).toEqual(['g0/shared-prompt']);
    step = s.schedule()!;
    expect(shape(step)).toEqual(['g1@8+2s', 'g2@8+2s']);
    expect(blockRows(step.plan)).toEqual([
      [0, 1, 3],
      [0, 1, 4],
    ]);
    expect(bm.owners().sort()).toEqual(['g1', 'g2']); // the hold ends with the schedule
    s.update(step, stepResult(step.plan));
    expect(bm.owners()).toEqual([]);

    // Aborting the waiting samples ends the hold at once.
    const t = new Scheduler(schedulerConfig(), new BlockManager(16, 4));
    const h = samples('h', 2, 10, 1);
    t.addSamples(h);
    step = t.schedule()!;
    t.update(step, stepResult(step.plan));
    expect(t.blocks.owners()).toEqual(['h0/shared-prompt']);
    t.finish(h[1]!, 'abort');
    expect(t.blocks.owners()).toEqual([]);
    expect(t.hasWork()).toBe(false);
  });

  it('a leader preempted before the samples shared prefills again while they wait', () => {
    // 5 blocks of 2 tokens; an older sequence grows and takes the leader's blocks twice.
    const bm = new BlockManager(5, 2);
    const s = new Scheduler(schedulerConfig({ longPrefillTokenThreshold: 2 }), bm);
    s.add(single('old', 3, 6));
    const g = samples('g', 2, 7, 2); // 6 shared tokens
    s.addSamples(g);
    const steps = runRecording(s);
    expect(g[0]!.numPreemptions).toBeGreaterThan(0);
    const g1 = steps.flat().filter((e) => e.startsWith('g1'));
    expect(g1).toEqual(['g1@6+1s', 'g1@7+1s']); // it never computed the shared part
    expect(steps.at(-2)).toEqual(['g0@6+1s', 'g1@6+1s']);
    for (const q of g) expect(q.outputIds).toHaveLength(2);
    expect(bm.owners()).toEqual([]);
  });

  it('a sample that shared is preempted with its own blocks only, and shares again when readmitted', () => {
    const bm = new BlockManager(7, 2);
    const s = new Scheduler(schedulerConfig(), bm);
    const old = single('old', 3, 8);
    s.add(old);
    const g = samples('g', 3, 5, 4); // 4 shared tokens (2 blocks)
    s.addSamples(g);
    let step = s.schedule()!;
    s.update(step, stepResult(step.plan));
    step = s.schedule()!;
    expect(shape(step)).toEqual(['old@3+1s', 'g0@5+1s', 'g1@4+1s', 'g2@4+1s']);
    expect(blockRows(step.plan).slice(1)).toEqual([
      [2, 3, 4],
      [2, 3, 5],
      [2, 3, 6],
    ]);
    s.update(step, stepResult(step.plan, 6));
    // old and g0 need a block each and none is free: g2 then g1 are preempted; each frees
    // its own block only (the shared blocks 2 and 3 stay with g0).
    step = s.schedule()!;
    expect(shape(step)).toEqual(['old@4+1s', 'g0@6+1s']);
    expect(g[1]!.status).toBe('waiting');
    expect(g[2]!.status).toBe('waiting');
    expect(blockRows(step.plan)[1]).toEqual([2, 3, 4, 5]);
    s.update(step, stepResult(step.plan, 7));
    const steps = runRecording(s);
    // g1 comes back sharing g0's blocks: it recomputes the prompt's last token and its one output.
    expect(steps.flat().find((e) => e.startsWith('g1'))).toBe('g1@4+2s');
    for (const q of [old, ...g]) expect(q.outputIds).toHaveLength(q.stop.maxTokens);
    expect(g[1]!.outputIds.slice(0, 1)).toEqual([6]);
    expect(bm.owners()).toEqual([]);
    expect(bm.numFreeBlocks).toBe(7);
  });

  it('never fails or leaks under memory pressure with groups and single requests mixed', () => {
    const bm = new BlockManager(12, 4);
    const s = new Scheduler(schedulerConfig({ maxNumBatchedTokens: 16, longPrefillTokenThreshold: 8 }), bm);
    const all: Sequence[] = [];
    for (let i = 0; i < 6; i++) {
      const group = samples(`r${i}-`, 1 + (i % 4), 6 + 3 * i, 5 + (i % 3));
      all.push(...group);
      s.addSamples(group);
      const q = single(`x${i}`, 3 + i, 4);
      all.push(q);
      s.add(q);
    }
    runToEnd(s);
    for (const q of all) expect(q.outputIds).toHaveLength(q.stop.maxTokens);
    expect(s.numPreemptions).toBeGreaterThan(0);
    expect(s.promptSharing.numSharedTokens).toBeGreaterThan(0);
    expect(bm.owners()).toEqual([]);
    expect(bm.numFreeBlocks).toBe(12);
  });

  it('refuses a group whose samples have different prompts', () => {
    const a = new Sequence('a', [1, 2, 3], { temperature: 0, topK: 0, topP: 1, seed: 0 }, stop(1), arrival++);
    const b = new Sequence('b', [1, 2, 4], { temperature: 0, topK: 0, topP: 1, seed: 1 }, stop(1), arrival++);
    expect(() => new PromptGroup([a, b], 2)).toThrow(/b has another prompt than a/);
  });
});
