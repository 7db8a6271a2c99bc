/**
 * The serving loop of an attention (or colocated) rank, readable top-down:
 *
 *   while there is work:
 *     step = scheduler.schedule()
 *     result = await engine.step(step.plan)
 *     for each sampled token: detokenize, match stop strings, stream to its request
 *
 * Requests come in as token ids with sampling and stop settings and leave as a stream of
 * text deltas ending in a `done` event. Aborting a request frees its KV blocks.
 *
 * A request with n > 1 becomes n sequences (samples), one handle each, that share the
 * prompt's KV blocks: one prefill (Scheduler, PromptGroup). Each handle is its own: aborting
 * one ends that sample only (the API aborts them all when the client goes away), and each
 * sample's blocks are freed when it ends, the shared ones with the last (none shared, and no
 * prefix caching, for a model with linear-attention layers: info.numStateSlots > 0, Scheduler).
 *
 * A request with a grammar (structured outputs) is submitted with submitAllAsync: its
 * grammar compiles first (a 400 naming the field when it cannot be used), then each sample
 * gets its own matcher, and every step that samples one of them masks its token
 * (grammar/maskedStep.ts). Steps without constrained sequences pay nothing.
 *
 * Prefill/decode disaggregation: on an attention rank with prefill ranks (options.remotePrefill)
 * a long prompt's full blocks are computed on a prefill rank and written into blocks the
 * scheduler holds before the request is queued; it then computes only the rest. A prefill
 * rank serves prefillOnly(): the prompt computed, nothing sampled, its blocks held for export.
 */
import { randomInt } from 'node:crypto';
import { setImmediate as yieldToEventLoop } from 'node:timers/promises';
import type { SamplingParams } from '@afd/shared';
import { AsyncQueue } from './AsyncQueue.js';
import type { EngineLike } from './engineLike.js';
import type { GrammarHandle } from './grammar/GrammarService.js';
import { runMaskedStep, type MaskedRow, type SeqGrammar } from './grammar/maskedStep.js';
import { BlockManager } from './kv/BlockManager.js';
import { PrefillOnly, type ParkedPrefill, type PrefillProgress } from './pd/PrefillOnly.js';
import type { ImportedPrompt } from './pd/remotePrefill.js';
import { Scheduler, type ScheduledStep, type SeqOutput } from './scheduler/Scheduler.js';
import { Sequence, type FinishReason } from './scheduler/Sequence.js';
import { checkLength, checkRequest } from './requestChecks.js';
import { ServingError, stepFailureError } from './ServingError.js';
import type { RequestPhases, ServingObserver } from './ServingObserver.js';
import type { GenerateParams, GenerationEvent, RequestHandle, ServingOptions } from './servingTypes.js';
import type { Decoder } from './tokenizer/IncrementalDetokenizer.js';
import { OutputText } from './tokenizer/OutputText.js';

export type { GenerateParams, GenerationEvent, RequestHandle, ServingOptions } from './servingTypes.js';
export type { RequestParamsInfo, RequestPhases, ServingObserver } from './ServingObserver.js';


interface RequestState {
  seq: Sequence;
  queue: AsyncQueue<GenerationEvent>;
  output: OutputText;
  startS: number;
  /** When its first step was scheduled; null while it waits. */
  scheduledS: number | null;
  firstTokenS: number | null;
  lastTokenS: number | null;
  /** Its matcher, when the request has a grammar. */
  grammar: SeqGrammar | null;
}

const nowS = (): number => performance.now() / 1000;

export class ServingEngine {
  readonly scheduler: Scheduler;
  /** Longest prompt + output of one request: the model's window, capped by the KV cache size. */
  readonly maxContextTokens: number;
  private readonly requests = new Map<string, RequestState>();
  private nextId = 0;
  private looping = false;
  private closed = false;
  /** Why the rank cannot serve now; null when it can. */
  private notReadyReason: string | null = null;
  /** Prefill rank: prompts computed for another rank, their blocks held until sent. */
  private readonly prefills: PrefillOnly;

  constructor(
    readonly engine: EngineLike,
    private readonly decoder: Decoder,
    private readonly options: ServingOptions,
    private observer: ServingObserver | null = null,
  ) {
    const { info } = engine;
    this.maxContextTokens = Math.min(info.maxModelLen, info.numKvBlocks * info.kvBlockSize);
    const blocks = new BlockManager(info.numKvBlocks, info.kvBlockSize, { prefixCaching: options.prefixCaching ?? false });
    this.scheduler = new Scheduler({ ...options.scheduler, maxModelLen: this.maxContextTokens, numStateSlots: info.numStateSlots ?? 0 }, blocks);
    this.prefills = new PrefillOnly(this.scheduler, () => ++this.nextId);
  }

  /**
   * Prefill rank: computes `promptIds` (whole blocks) into the KV cache without sampling;
   * resolves when all of it is there, its blocks held until ParkedPrefill.release(). Rejects
   * with a ServingError when the rank cannot serve, the step's error, or an AbortError.
   */
  prefillOnly(promptIds: readonly number[], cacheSalt: string | undefined, signal?: AbortSignal, onProgress?: PrefillProgress): Promise<ParkedPrefill> {
    const { ready, reason } = this.readiness;
    if (!ready) return Promise.reject(new ServingError('not_ready', `the engine is not ready (${reason}); retry later`));
    if (promptIds.length > this.maxContextTokens) {
      return Promise.reject(new ServingError('invalid_request', `a prefill of ${promptIds.length} tokens is longer than this rank's ${this.maxContextTokens}-token context (its window, capped by its KV cache)`));
    }
    const parked = this.prefills.submit(promptIds, cacheSalt, signal, onProgress);
    void this.runLoop();
    return parked;
  }

  /** Sets the metrics hooks. */
  observe(observer: ServingObserver): void {
    this.observer = observer;
  }

  /** Marks the rank unable (reason) or able (null) to serve; new requests get 503 meanwhile. */
  setNotReady(reason: string | null): void {
    this.notReadyReason = reason;
  }

  /** Not ready when closed, marked so, or the engine cannot step now (its problem(), read at each call). */
  get readiness(): { ready: boolean; reason: string | null } {
    const reason = this.closed ? 'shutting down' : (this.notReadyReason ?? this.engine.problem?.() ?? null);
    return { ready: reason === null, reason };
  }

  get numActiveRequests(): number {
    return this.requests.size;
  }

  /** Checks a request against the context window; returns the effective max tokens. `promptParam` names the prompt's field in errors. */
  checkLength(promptTokens: number, maxTokens: number | undefined, promptParam = 'messages'): number {
    return checkLength(this.maxContextTokens, promptTokens, maxTokens, promptParam);
  }

  /** See requestChecks.ts (context window, max-num-seqs, vocabulary); returns the effective max tokens. */
  checkRequest(params: GenerateParams, promptParam = 'messages'): number {
    return checkRequest(params, { maxContextTokens: this.maxContextTokens, maxNumSeqs: this.options.scheduler.maxNumSeqs, vocabSize: this.engine.info.vocabSize }, promptParam);
  }

  /** Queues a request of one sample; throws ServingError when it cannot be accepted. */
  submit(params: GenerateParams): RequestHandle {
    if ((params.n ?? 1) !== 1) throw new Error(`ServingEngine.submit: n=${params.n} gives several handles; use submitAll`);
    return this.submitAll([params])[0]!;
  }

  /**
   * Queues requests together, all or none: every one is checked, then the queue limit for
   * the whole batch, and only then are they added, one after another before the loop
   * schedules its next step. The scheduler thus admits them into the same step (as far as
   * max-num-seqs and the token budget allow), and they decode as one batch. Returns n
   * handles per request, in order (request i's sample j follows its sample j - 1). Throws
   * ServingError when any of them cannot be accepted; then none is queued.
   */
  submitAll(batch: GenerateParams[]): RequestHandle[] {
    if (batch.some((p) => p.grammar)) throw new Error('ServingEngine.submitAll: a request with a grammar goes through submitAllAsync (its grammar compiles first)');
    const maxTokens = this.checkAdmission(batch);
    const handles = batch.flatMap((params, i) => this.add(params, maxTokens[i]!, null, null));
    void this.runLoop();
    return handles;
  }

  /**
   * submitAll for requests that may have a grammar: each distinct grammar is compiled first
   * (rejects with a 400 naming its field when one cannot be used; then none is queued), and
   * the checks run again after (the queue may have filled meanwhile).
   */
  async submitAllAsync(batch: GenerateParams[]): Promise<RequestHandle[]> {
    const remote = this.options.remotePrefill;
    if (!batch.some((p) => p.grammar) && !remote) return this.submitAll(batch);
    this.checkAdmission(batch);
    const grammar = this.options.grammar;
    const compiled = await Promise.all(
      batch.map((p) => {
        if (!p.grammar) return null;
        if (!grammar) throw new ServingError('invalid_request', `${p.grammar.param}: structured outputs are not available on this server; omit it`, p.grammar.param);
        return grammar.compile(p.grammar);
      }),
    );
    // Prefill/decode disaggregation: each long prompt's full blocks from a prefill rank (null: computed here).
    const imported = remote ? await Promise.all(batch.map((p) => remote.importFor(p, this.scheduler))) : batch.map(() => null);
    try {
      const maxTokens = this.checkAdmission(batch);
      const handles = batch.flatMap((params, i) => this.add(params, maxTokens[i]!, compiled[i]!, imported[i]!));
      void this.runLoop();
      return handles;
    } catch (err) {
      for (const imp of imported) if (imp) this.scheduler.imports.release(imp.hold);
      throw err;
    }
  }

  /** Readiness, each request's checks and the queue limit for the whole batch; the effective max tokens of each. */
  private checkAdmission(batch: GenerateParams[]): number[] {
    const { ready, reason } = this.readiness;
    if (!ready) throw new ServingError('not_ready', `the engine is not ready (${reason}); retry later`);
    const maxTokens = batch.map((params) => this.checkRequest(params));
    this.checkQueue(batch.reduce((k, params) => k + (params.n ?? 1), 0));
    return maxTokens;
  }

  /**
   * Refuses (queue_full) `count` new sequences when the last of them would wait beyond the
   * queue limit (a request counts its n samples). Only a request that would have to wait (the running batch is full) counts
   * against it: with a limit of 0 the rank still serves up to max-num-seqs at once.
   */
  private checkQueue(count: number): void {
    const waiting = this.scheduler.numWaiting;
    const lastWaiting = waiting + count - 1; // the batch's earlier requests are waiting too (none is scheduled yet)
    const wouldWait = this.scheduler.numRunning + lastWaiting >= this.options.scheduler.maxNumSeqs;
    if (!wouldWait || lastWaiting < this.options.maxQueuedRequests) return;
    const limit = this.options.maxQueuedRequests;
    if (count === 1) throw new ServingError('queue_full', `too many queued requests (${waiting} waiting, limit ${limit}); retry later`);
    throw new ServingError('queue_full', `too many queued requests for a batch of ${count} (${waiting} waiting, limit ${limit}); retry later or send a smaller batch`);
  }

  /** Adds a checked request's n samples to the scheduler, one handle (and matcher, with a grammar) each (the caller starts the loop). */
  private add(params: GenerateParams, maxTokens: number, grammar: GrammarHandle | null, imported: ImportedPrompt | null): RequestHandle[] {
    const minTokens = params.minTokens ?? 0;
    const stop = { maxTokens, eosTokenIds: this.engine.info.eosTokenIds, stopTokenIds: params.stopTokenIds ?? [], ignoreEos: params.ignoreEos ?? false, minTokens };
    const extras = { penalties: params.penalties, logitBias: params.logitBias, logprobs: params.logprobs, promptLogprobs: params.promptLogprobs, constrained: grammar !== null };
    const seed = params.sampling.seed;
    const seqs = Array.from({ length: params.n ?? 1 }, (_, i) => {
      const sampling: SamplingParams = { ...params.sampling, seed: seed === undefined ? randomInt(0, 2 ** 32) : (seed + i) >>> 0 };
      const id = `req-${this.nextId++}`;
      return new Sequence(id, params.promptIds, sampling, stop, this.nextId, extras, params.cacheSalt);
    });
    if (imported) {
      for (const seq of seqs) seq.numCachedPromptTokens = imported.cachedTokens;
      this.scheduler.addImported(seqs, imported.hold);
    } else this.scheduler.addSamples(seqs);
    return seqs.map((seq, sampleIndex) => {
      const output = new OutputText(this.decoder, params.promptIds, {
        skipSpecialTokens: params.skipSpecialTokens ?? true,
        spacesBetweenSpecialTokens: params.spacesBetweenSpecialTokens ?? true,
        stop: params.stop ?? [],
        includeStopStrInOutput: params.includeStopStrInOutput ?? false,
        minTokens,
      });
      const matcher = grammar ? { matcher: this.options.grammar!.newMatcher(grammar), fed: 0 } : null;
      const state: RequestState = { seq, queue: new AsyncQueue(), output, startS: nowS(), scheduledS: null, firstTokenS: null, lastTokenS: null, grammar: matcher };
      this.requests.set(seq.id, state);
      // Request-level metrics once per request (its prompt counted once); the rest per sample.
      if (sampleIndex === 0) this.observer?.onRequestStart(seq.promptIds.length, { n: seqs.length, maxTokens });
      const handle: RequestHandle = { id: seq.id, promptTokens: seq.promptIds.length, sampleIndex, events: state.queue, abort: () => this.end(state, 'abort') };
      if (imported) handle.pdTransfer = imported.transfer;
      return handle;
    });
  }

  /**
   * Aborts every request and stops scheduling; waits for the step in flight (at most
   * `maxWaitMs`, so a stuck peer cannot block shutdown). The caller closes the engine after.
   */
  async close(maxWaitMs = 10_000): Promise<void> {
    this.closed = true;
    for (const state of [...this.requests.values()]) this.end(state, 'abort');
    this.prefills.closeAll();
    const deadline = Date.now() + maxWaitMs;
    while (this.looping && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
  }

  private async runLoop(): Promise<void> {
    if (this.looping) return;
    this.looping = true;
    try {
      while (!this.closed && this.scheduler.hasWork()) {
        const step = this.scheduler.schedule();
        if (!step) {
          await new Promise((r) => setTimeout(r, 1)); // nothing fits right now
          continue;
        }
        this.noteScheduled(step);
        let outputs: SeqOutput[];
        let grammarFailed = new Map<Sequence, ServingError>();
        try {
          const rows = this.maskedRows(step);
          let result;
          if (rows.length === 0) result = await this.engine.step(step.plan);
          else ({ result, failed: grammarFailed } = await runMaskedStep(this.engine, step.plan, rows, this.options.grammar!));
          outputs = this.scheduler.update(step, result);
          this.prefills.onStep(step.entries);
          this.prefills.onParked(this.scheduler.takeParked());
          if (outputs.length > 0) this.observer?.onIteration(outputs.reduce((n, o) => n + 1 + (o.seq.outputIds.length === 1 ? o.seq.promptIds.length : 0), 0));
        } catch (err) {
          // Retryable (503) for a request with no token yet; problem() keeps new ones out meanwhile.
          const failed = this.scheduler.failStep(step);
          for (const seq of failed) this.fail(seq.id, stepFailureError((err as Error).message, seq.outputIds.length > 0));
          this.prefills.onFailed(failed, err as Error);
          continue;
        }
        for (const [seq, error] of grammarFailed) {
          this.scheduler.finish(seq, 'abort');
          this.fail(seq.id, error);
        }
        for (const out of outputs) if (!grammarFailed.has(out.seq)) this.onToken(out);
        await yieldToEventLoop(); // let HTTP handlers run between steps
      }
    } finally {
      this.looping = false;
    }
  }

  /** The step's sequences with a mask row (StepExtras.maskRows), in row order; empty when none. */
  private maskedRows(step: ScheduledStep): MaskedRow[] {
    const rows = step.plan.extras?.maskRows;
    if (!rows) return [];
    const out: MaskedRow[] = [];
    step.entries.forEach((e, i) => {
      if (rows[i]! >= 0) out.push({ seq: e.seq, grammar: this.requests.get(e.seq.id)?.grammar ?? null });
    });
    return out;
  }

  /** Metrics of a scheduled step: requests leaving the queue, prefix-cache lookups of admitted sequences. */
  private noteScheduled(step: ScheduledStep): void {
    if (!this.observer) return;
    const t = nowS();
    for (const entry of step.entries) {
      if (entry.prefixLookup) this.observer.onPrefixCacheLookup(entry.prefixLookup.queriedTokens, entry.prefixLookup.hitTokens);
      const state = this.requests.get(entry.seq.id);
      if (!state || state.scheduledS !== null) continue;
      state.scheduledS = t;
      this.observer.onRequestScheduled(t - state.startS);
    }
  }

  private onToken(out: SeqOutput): void {
    const state = this.requests.get(out.seq.id);
    if (!state) return;
    const t = nowS();
    const first = state.firstTokenS === null;
    if (first) {
      state.firstTokenS = t;
      this.observer?.onFirstToken(t - state.startS, t - (state.scheduledS ?? state.startS));
    } else this.observer?.onNextToken(t - (state.lastTokenS ?? t));
    state.lastTokenS = t;
    let finish = out.finishReason;
    const byToken = finish === 'stop' && out.seq.isStopToken(out.tokenId);
    const match = state.output.push(out.tokenId, finish === null ? null : byToken ? 'stop-token' : 'other');
    if (match.stopped) finish = 'stop';
    const delta: GenerationEvent = { type: 'delta', text: match.text, tokenIds: [out.tokenId] };
    if (out.logprobs) delta.logprobs = [out.logprobs];
    if (first && out.seq.logits.promptLogprobs !== undefined) delta.promptLogprobs = out.seq.promptLogprobs;
    state.queue.push(delta);
    if (finish) this.end(state, finish);
  }

  private end(state: RequestState, reason: FinishReason): void {
    if (!this.requests.has(state.seq.id)) return;
    this.requests.delete(state.seq.id);
    if (state.grammar) this.options.grammar!.free(state.grammar.matcher);
    this.scheduler.finish(state.seq, reason); // no-op when the scheduler already finished it
    const completionTokens = state.seq.outputIds.length;
    state.queue.push({ type: 'done', finishReason: reason, promptTokens: state.seq.promptIds.length, completionTokens, cachedTokens: state.seq.numCachedPromptTokens ?? 0 });
    state.queue.end();
    this.observer?.onRequestEnd(nowS() - state.startS, completionTokens, reason, phasesOf(state));
  }

  private fail(id: string, error: ServingError): void {
    const state = this.requests.get(id);
    if (!state) return;
    this.requests.delete(id);
    if (state.grammar) this.options.grammar!.free(state.grammar.matcher);
    state.queue.push({ type: 'error', error });
    state.queue.end();
    this.observer?.onRequestEnd(nowS() - state.startS, state.seq.outputIds.length, 'error', phasesOf(state));
  }
}

function phasesOf(s: RequestState): RequestPhases {
  if (s.firstTokenS === null || s.lastTokenS === null) return { decodeS: null, inferenceS: null };
  return { decodeS: s.lastTokenS - s.firstTokenS, inferenceS: s.lastTokenS - (s.scheduledS ?? s.startS) };
}
