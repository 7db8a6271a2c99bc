/**
 * Continuous-batching scheduler (vLLM v1 style, pure data): every step gets a token
 * budget; decoding sequences are scheduled first (one token each), then unfinished prompt
 * chunks, then new requests in arrival order. Long prompts are prefilled in chunks so
 * decodes are never starved. When KV blocks run out the newest sequence is preempted
 * (its blocks freed, recomputed later from its prompt + output), so the oldest always
 * makes progress and a request that fits the cache is never failed. The n samples of one
 * prompt share its full KV blocks: one prefill, then each computes only the prompt's tail
 * (PromptGroup.ts).
 * A model with linear-attention layers (numStateSlots > 0) keeps a recurrent state per
 * sequence in an engine slot, held from admission to the end or a preemption (restart from
 * position 0); as a slot holds only its sequence's history, nothing reuses KV there.
 * Prefill/decode disaggregation: KV computed by a prefill rank arrives in blocks held for it
 * (holdForImport, KvImports.ts) and its request's samples start from them; a prefill rank's
 * own prefill-only sequences are parked, blocks kept, once their prompt is computed
 * (takeParked), and finished by the caller after their KV is sent.
 *
 *   const step = scheduler.schedule();   // StepPlan + which sequences it covers
 *   const result = await engine.step(step.plan);
 *   const outputs = scheduler.update(step, result);
 */
import { buildStepPlan, type StepResult } from '@afd/shared';
import { BlockManager, blocksForTokens, type CachedBlocks } from '../kv/BlockManager.js';
import { checkResult } from './checkResult.js';
import { KvImports, type KvHold } from './KvImports.js';
import { logprobRowsOf } from './logprobRows.js';
import { PenaltySlots } from './PenaltySlots.js';
import { PromptGroup } from './PromptGroup.js';
import { stateSlotPool, type SlotPool } from './SlotPool.js';
import { chooseStageSplit } from './stageSplit.js';
import type { FinishReason, Sequence } from './Sequence.js';
import type { PlanEntry, PromptSharingCounters, ScheduledStep, SchedulerConfig, SeqOutput } from './schedulerTypes.js';
export type { PlanEntry, PromptSharingCounters, ScheduledStep, SchedulerConfig, SeqOutput } from './schedulerTypes.js';


export class Scheduler {
  /** Waiting sequences; preempted ones go back to the front. */
  private readonly waiting: Sequence[] = [];
  /** Running sequences in arrival order (the newest is last). */
  private running: Sequence[] = [];
  private inFlight: ScheduledStep | null = null;
  /** Total preemptions so far. */
  numPreemptions = 0;
  /** Prefix-sharing counters since start. */
  readonly promptSharing: PromptSharingCounters = { numLookedUpTokens: 0, numSharedTokens: 0 };
  /** The sample group of every queued or running sequence that has siblings. */
  private readonly groups = new Map<Sequence, PromptGroup>();
  /** Groups whose shared prefix is held for their waiting samples until the next schedule() ends. */
  private readonly held = new Set<PromptGroup>();
  /** The engine's penalty slots of running sequences with a penalty on. */
  readonly penaltySlots = new PenaltySlots();
  /** The engine's recurrent-state slots of running sequences (numStateSlots > 0), else null. */
  readonly stateSlots: SlotPool | null;
  /** Blocks held for KV that arrives from a prefill rank, and the samples that start from them. */
  readonly imports: KvImports;
  /** Prefill-only sequences whose prompt is computed, not yet taken by takeParked. */
  private readonly parked: Sequence[] = [];

  constructor(
    readonly config: SchedulerConfig,
    readonly blocks: BlockManager,
  ) {
    if (config.maxNumBatchedTokens < 1 || config.maxNumSeqs < 1) throw new Error('Scheduler: maxNumBatchedTokens and maxNumSeqs must be at least 1');
    this.stateSlots = stateSlotPool(config.numStateSlots ?? 0, config.maxNumSeqs, blocks.prefixCaching);
    this.imports = new KvImports(blocks, this.stateSlots);
  }

  /** Blocks (and a state slot, with linear-attention layers) for `numBlocks` blocks of KV arriving from elsewhere; null: no room now. */
  holdForImport(numBlocks: number): KvHold | null {
    return this.imports.hold(numBlocks, this.waiting.length);
  }

  /**
   * Queues the samples of one request that start from a hold's blocks, written by the
   * caller (each computes only the tokens after them). Throws, queuing none, when one could
   * never fit the KV cache; the hold is the caller's to release then.
   */
  addImported(seqs: readonly Sequence[], hold: KvHold): void {
    for (const seq of seqs) this.checkFits(seq);
    if (hold.numTokens >= Math.min(...seqs.map((s) => s.numTokens))) throw new Error(`Scheduler.addImported: the hold's ${hold.numTokens} tokens leave nothing to compute (a sample must compute at least its last token)`);
    this.imports.attach(hold, seqs);
    for (const seq of seqs) {
      seq.status = 'waiting';
      this.waiting.push(seq);
    }
  }

  /** Prefill-only sequences parked since the last call (their blocks held until finish()). */
  takeParked(): Sequence[] {
    return this.parked.splice(0);
  }

  get numWaiting(): number {
    return this.waiting.length;
  }

  get numRunning(): number {
    return this.running.length;
  }

  hasWork(): boolean {
    return this.waiting.length > 0 || this.running.length > 0;
  }

  /** Queues a new sequence. Throws when it could never fit the KV cache, even alone. */
  add(seq: Sequence): void {
    this.addSamples([seq]);
  }

  /**
   * Queues the n samples of one prompt (in arrival order) as a group whose members share
   * the prompt's full KV blocks. Throws, queuing none, when one could never fit the KV
   * cache, even alone.
   */
  addSamples(seqs: readonly Sequence[]): void {
    for (const seq of seqs) this.checkFits(seq);
    // Samples that report prompt logprobs each compute the whole prompt (a shared prefix skips its
    // rows); so does each sample of a model with recurrent state (a shared prefix has none).
    const share = seqs.length > 1 && seqs[0]!.logits.promptLogprobs === undefined && this.stateSlots === null;
    const group = share ? new PromptGroup(seqs, this.blocks.kvBlockSize) : null;
    for (const seq of seqs) {
      seq.status = 'waiting';
      this.waiting.push(seq);
      if (group) this.groups.set(seq, group);
    }
  }

  /** Throws when the sequence could never fit the KV cache, even alone. */
  private checkFits(seq: Sequence): void {
    const maxTotal = Math.min(seq.promptIds.length + seq.stop.maxTokens, this.config.maxModelLen);
    if (blocksForTokens(maxTotal, this.blocks.kvBlockSize) > this.blocks.numBlocks) {
      throw new Error(`Scheduler.add: ${seq.id} may grow to ${maxTotal} tokens, more than the ${this.blocks.numBlocks * this.blocks.kvBlockSize} the KV cache holds; lower max_tokens`);
    }
  }

  /**
   * Ends a sequence now (client went away, or a stop string matched): its blocks are freed
   * at once, or right after the in-flight step when that step covers it.
   */
  finish(seq: Sequence, reason: FinishReason): void {
    if (seq.isFinished) return;
    seq.status = 'finished';
    seq.finishReason = reason;
    const busy = this.inFlight?.entries.some((e) => e.seq === seq) ?? false;
    // Free at once even while its step runs: the next owner's first step seeds (clears) it.
    this.releasePenaltySlot(seq);
    if (!busy) this.releaseStateSlot(seq); // after its last step, which writes it: a KV import copies into free slots beside a step (Engine.pullStateSlot)
    const wi = this.waiting.indexOf(seq);
    if (wi >= 0) this.waiting.splice(wi, 1);
    this.imports.ended(seq); // a sample that waited on imported blocks lets go of them
    this.running = this.running.filter((s) => s !== seq);
    const group = this.groups.get(seq);
    this.groups.delete(seq);
    if (!busy && group?.shouldHoldFrom(seq)) {
      // Its waiting siblings still share the prompt's blocks at the next schedule().
      this.blocks.allocate(group.holdId, group.numSharedTokens, { fromSeqId: seq.id, numBlocks: group.numSharedTokens / this.blocks.kvBlockSize });
      group.held = true;
      this.held.add(group);
    }
    if (!busy) this.blocks.free(seq.id);
    if (group?.held && !group.members.some((m) => m.status === 'waiting')) this.release(group); // no sibling left to share it
  }

  /** Builds the next step, or null when nothing can run. */
  schedule(): ScheduledStep | null {
    if (this.inFlight) throw new Error('Scheduler.schedule: the previous step has not been updated yet');
    const cfg = this.config;
    let budget = cfg.maxNumBatchedTokens;
    const entries: PlanEntry[] = [];
    const chunkCap = cfg.longPrefillTokenThreshold > 0 ? cfg.longPrefillTokenThreshold : Infinity;

    // Running sequences: decodes first, then unfinished prompt chunks.
    const candidates = [...this.running.filter((s) => s.numUncomputedTokens === 1), ...this.running.filter((s) => s.numUncomputedTokens > 1)];
    const unscheduled = new Set(candidates);
    for (const seq of candidates) {
      if (!unscheduled.has(seq)) continue; // preempted while making room
      if (budget === 0 || entries.length >= cfg.maxNumSeqs) break;
      const numNew = Math.min(seq.numUncomputedTokens, budget, chunkCap);
      unscheduled.delete(seq);
      let fits = true;
      while (!this.blocks.canAppend(seq.id, seq.numComputedTokens + numNew)) {
        // Victim: the newest sequence not yet in this step, else the newest one already in
        // it that is newer than `seq` (taken back out), else `seq` itself.
        const victim = this.newest(unscheduled);
        if (victim) {
          unscheduled.delete(victim);
          this.preempt(victim);
          continue;
        }
        const newer = entries.filter((e) => e.seq.arrivalIndex > seq.arrivalIndex).sort((a, b) => b.seq.arrivalIndex - a.seq.arrivalIndex)[0];
        if (newer) {
          entries.splice(entries.indexOf(newer), 1);
          budget += newer.numNewTokens;
          this.preempt(newer.seq);
          continue;
        }
        this.preempt(seq);
        fits = false;
        break;
      }
      if (!fits) continue;
      this.blocks.append(seq.id, seq.numComputedTokens + numNew);
      entries.push(this.entry(seq, numNew));
      budget -= numNew;
    }

    // New (or preempted) sequences, first come first served; never skip the head, except a
    // sample that waits for its sibling to prefill their shared prompt blocks.
    for (let w = 0; w < this.waiting.length && budget > 0 && entries.length < cfg.maxNumSeqs; ) {
      const seq = this.waiting[w]!;
      if (this.stateSlots?.numFree === 0 && !this.imports.bringsSlot(seq)) break; // every recurrent-state slot is held
      const admission = this.groups.get(seq)?.admission(seq) ?? { kind: 'prefill' };
      if (admission.kind === 'wait') {
        w++;
        continue;
      }
      const imported = this.imports.reusedFor(seq);
      const reused = imported ?? (admission.kind === 'share' ? { fromSeqId: admission.donorId, numBlocks: admission.numSharedTokens / this.blocks.kvBlockSize } : this.cachedStart(seq));
      const shared = (reused ? ('cachedBlocks' in reused ? reused.cachedBlocks.length : reused.numBlocks) : 0) * this.blocks.kvBlockSize;
      const numNew = Math.min(seq.numTokens - shared, budget, chunkCap);
      if (!this.blocks.canAllocate(shared + numNew, reused ?? 0)) break;
      this.waiting.splice(w, 1);
      this.blocks.allocate(seq.id, shared + numNew, reused);
      if (imported) this.imports.admitted(seq); // takes the hold's state slot, if any
      if (this.stateSlots && seq.stateSlot === null) {
        if (shared > 0) throw new Error(`Scheduler.schedule: ${seq.id} would start at token ${shared} with a fresh recurrent-state slot; a model with state slots reuses no KV`);
        seq.stateSlot = this.stateSlots.take();
      }
      seq.numComputedTokens = shared;
      // Imported KV was computed elsewhere, not found in a cache: it counts as no hit (the caller sets the prefill rank's own hits).
      const hits = imported ? 0 : shared;
      seq.numCachedPromptTokens ??= Math.min(hits, seq.promptIds.length);
      this.promptSharing.numLookedUpTokens += seq.numTokens;
      this.promptSharing.numSharedTokens += hits;
      seq.status = 'running';
      this.running.push(seq);
      // Hits: the tokens found in the prefix cache or a sibling's shared blocks (n > 1).
      entries.push({ ...this.entry(seq, numNew), prefixLookup: { queriedTokens: seq.numTokens, hitTokens: hits } });
      budget -= numNew;
    }
    // Keep `running` in arrival order so "newest" stays the preemption victim.
    this.running.sort((a, b) => a.arrivalIndex - b.arrivalIndex);
    this.releaseHeldPrefixes();

    if (entries.length === 0) return null;
    const hasPrefill = entries.some((e) => e.numNewTokens > 1 || !e.sample);
    const stageSplit = chooseStageSplit(entries.map((e) => e.numNewTokens), hasPrefill, cfg.dbo);
    for (const { seq } of entries) {
      if (!this.blocks.isWritableFrom(seq.id, seq.numComputedTokens)) throw new Error(`Scheduler.schedule: ${seq.id} would write into a KV block it shares (from token ${seq.numComputedTokens}); shared blocks must stay full and unchanged`);
      if (this.stateSlots && seq.stateSlot === null) throw new Error(`Scheduler.schedule: ${seq.id} runs without a recurrent-state slot`);
    }
    for (const { seq } of entries) {
      if (seq.penaltiesOn && seq.penaltySlot === null) {
        seq.penaltySlot = this.penaltySlots.take();
        seq.penaltySlotSeeded = false;
      }
    }
    const plan = buildStepPlan(
      entries.map(({ seq, numNewTokens, sample }) => ({
        tokenIds: seq.tokensFrom(seq.numComputedTokens, numNewTokens),
        numCached: seq.numComputedTokens,
        blockTable: this.blocks.blockTable(seq.id),
        sample,
        ...seq.planFields(numNewTokens, sample),
      })),
      { stageSplit },
    );
    for (const { seq } of entries) if (seq.penaltySlot !== null) seq.penaltySlotSeeded = true;
    this.inFlight = { plan, entries };
    return this.inFlight;
  }

  /** Applies a step's result: advances the KV position, appends sampled tokens, finishes sequences. */
  update(step: ScheduledStep, result: StepResult): SeqOutput[] {
    if (step !== this.inFlight) throw new Error('Scheduler.update: this step is not the one in flight');
    checkResult(step.plan, result); // before any change: a broken result fails the step (failStep)
    this.inFlight = null;
    const outputs: SeqOutput[] = [];
    step.entries.forEach((entry, i) => {
      const seq = entry.seq;
      if (seq.isFinished) {
        this.blocks.free(seq.id); // finished (aborted) while the step ran
        this.releaseStateSlot(seq);
        return;
      }
      if (seq.status !== 'running') return; // cannot happen: preemption only happens in schedule()
      const x = step.plan.extras;
      if (x && x.numPromptLogprobs[i]! >= 0) seq.addPromptLogprobs(logprobRowsOf(result.promptLogprobs!, i, x.numPromptLogprobs[i]!), seq.numComputedTokens);
      seq.numComputedTokens += entry.numNewTokens;
      this.cacheComputedBlocks(seq);
      if (seq.prefillOnly && seq.numComputedTokens === seq.numTokens) {
        this.park(seq);
        return;
      }
      if (!entry.sample) return;
      const tokenId = result.tokenIds[i]!;
      seq.appendOutput(tokenId);
      let reason: FinishReason | null = null;
      if (seq.stopsOnLastToken()) reason = 'stop';
      else if (seq.outputIds.length >= seq.stop.maxTokens || seq.numTokens >= this.config.maxModelLen) reason = 'length';
      if (reason) this.finish(seq, reason);
      const out: SeqOutput = { seq, tokenId, finishReason: reason };
      if (x && x.numLogprobs[i]! >= 0) out.logprobs = logprobRowsOf(result.logprobs!, i, x.numLogprobs[i]!)[0]!;
      outputs.push(out);
    });
    return outputs;
  }

  /** The engine failed the step: its sequences are finished (aborted) and their blocks freed. */
  failStep(step: ScheduledStep): Sequence[] {
    if (step !== this.inFlight) throw new Error('Scheduler.failStep: this step is not the one in flight');
    this.inFlight = null;
    const seqs = step.entries.map((e) => e.seq);
    for (const seq of seqs) {
      this.finish(seq, 'abort'); // not busy any more: its state slot goes back too
      this.blocks.free(seq.id);
    }
    return seqs;
  }

  /**
   * The longest run of a sequence's full blocks found in the prefix cache, leaving at least
   * its last token to compute (to sample from); none for a sequence that reports prompt
   * logprobs (each of its rows is computed) or without prefix caching.
   */
  private cachedStart(seq: Sequence): CachedBlocks | undefined {
    if (!this.blocks.prefixCaching || seq.logits.promptLogprobs !== undefined) return undefined;
    const bs = this.blocks.kvBlockSize;
    const maxBlocks = Math.floor((seq.numTokens - 1) / bs);
    if (maxBlocks === 0) return undefined;
    const cachedBlocks = this.blocks.cachedPrefix(seq.blockHashes(bs, maxBlocks), maxBlocks);
    return cachedBlocks.length > 0 ? { cachedBlocks } : undefined;
  }

  /** Prefix caching: makes the sequence's full blocks whose KV is now computed findable by content. */
  private cacheComputedBlocks(seq: Sequence): void {
    if (!this.blocks.prefixCaching) return;
    const bs = this.blocks.kvBlockSize;
    const numFull = Math.floor(seq.numComputedTokens / bs);
    if (numFull > 0) this.blocks.cacheFullBlocks(seq.id, seq.blockHashes(bs, numFull), numFull);
  }

  /** A held prefix lives one schedule(): the samples admitted now share it, the others prefill later. */
  private releaseHeldPrefixes(): void {
    for (const group of this.held) this.release(group);
  }

  private release(group: PromptGroup): void {
    this.blocks.free(group.holdId);
    group.held = false;
    this.held.delete(group);
  }

  private entry(seq: Sequence, numNew: number): PlanEntry {
    return { seq, numNewTokens: numNew, sample: !seq.prefillOnly && seq.numComputedTokens + numNew === seq.numTokens };
  }

  /** A prefill-only sequence's prompt is computed: out of the running batch, blocks and slot kept until finish(). */
  private park(seq: Sequence): void {
    this.running = this.running.filter((s) => s !== seq);
    seq.status = 'parked';
    this.parked.push(seq);
  }

  private releaseStateSlot(seq: Sequence): void {
    if (seq.stateSlot === null) return;
    this.stateSlots!.give(seq.stateSlot);
    seq.stateSlot = null;
  }

  private releasePenaltySlot(seq: Sequence): void {
    if (seq.penaltySlot === null) return;
    this.penaltySlots.give(seq.penaltySlot);
    seq.penaltySlot = null;
    seq.penaltySlotSeeded = false;
  }

  private newest(pool: Set<Sequence>): Sequence | undefined {
    let best: Sequence | undefined;
    for (const s of pool) if (!best || s.arrivalIndex > best.arrivalIndex) best = s;
    return best;
  }

  /** Frees a running sequence's blocks and puts it back at the front of the queue. */
  private preempt(seq: Sequence): void {
    this.blocks.free(seq.id);
    this.releasePenaltySlot(seq); // seeded again from its tokens when it runs again
    this.releaseStateSlot(seq); // it restarts from position 0, in whatever slot it gets then
    seq.numComputedTokens = 0;
    seq.numPreemptions += 1;
    seq.status = 'waiting';
    this.numPreemptions += 1;
    this.running = this.running.filter((s) => s !== seq);
    // Preempted sequences are older than anything still waiting: keep arrival order.
    const at = this.waiting.findIndex((w) => w.arrivalIndex > seq.arrivalIndex);
    if (at < 0) this.waiting.push(seq);
    else this.waiting.splice(at, 0, seq);
  }
}
