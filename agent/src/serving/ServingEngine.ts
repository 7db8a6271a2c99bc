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
 */
import { randomInt } from 'node:crypto';
import { setImmediate as yieldToEventLoop } from 'node:timers/promises';
import type { SamplingParams } from '@afd/shared';
import { AsyncQueue } from './AsyncQueue.js';
import type { EngineLike } from './engineLike.js';
import { BlockManager } from './kv/BlockManager.js';
import { Scheduler, type ScheduledStep, type SchedulerConfig, type SeqOutput } from './scheduler/Scheduler.js';
import { Sequence, type FinishReason } from './scheduler/Sequence.js';
import { ServingError } from './ServingError.js';
import { IncrementalDetokenizer, type Decoder } from './tokenizer/IncrementalDetokenizer.js';
import { StopStringMatcher } from './tokenizer/StopStringMatcher.js';

/** What a caller asks to generate. */
export interface GenerateParams {
  promptIds: number[];
  /** Sampling; seed undefined draws a random one. */
  sampling: Omit<SamplingParams, 'seed'> & { seed?: number | undefined };
  /** Most tokens to generate; undefined = up to the context window. */
  maxTokens?: number | undefined;
  /** Text that ends generation (not included in the output). */
  stop?: string[];
  /** Token ids that end generation. */
  stopTokenIds?: number[];
  /** Keep going past EOS (benchmarks). */
  ignoreEos?: boolean;
}

export type GenerationEvent =
  /** New text (may be empty when a token completes no character yet) and the token ids behind it. */
  | { type: 'delta'; text: string; tokenIds: number[] }
  | { type: 'done'; finishReason: FinishReason; promptTokens: number; completionTokens: number }
  | { type: 'error'; error: ServingError };

/** What a request asked for (vLLM's request_params_* histograms). */
export interface RequestParamsInfo {
  /** Completions asked for (1 until `n` > 1 is served). */
  n: number;
  /** Most tokens it may generate (the request's max_tokens, else what the context window leaves). */
  maxTokens: number;
}

/**
 * Times of an ended request's phases that close at its end (seconds); null when the request
 * ended before its first token. Queue and prefill times are reported as they close.
 */
export interface RequestPhases {
  /** First token -> last token. */
  decodeS: number | null;
  /** Scheduled -> last token (prefill + decode). */
  inferenceS: number | null;
}

/**
 * Hooks for metrics; every time is in seconds, measured from when the request was added
 * (after tokenisation). The phases follow vLLM: queue (added -> first scheduled), prefill
 * (scheduled -> first token), decode (first -> last token); a preemption does not restart them.
 */
export interface ServingObserver {
  onRequestStart(promptTokens: number, params: RequestParamsInfo): void;
  /** The request left the waiting queue: its first step was scheduled, `queueS` after it was added. */
  onRequestScheduled(queueS: number): void;
  /** Prefill done: the first token, `ttftS` after the request was added, `prefillS` after it was scheduled. */
  onFirstToken(ttftS: number, prefillS: number): void;
  onNextToken(itlS: number): void;
  /** An engine step completed, computing `numTokens` tokens (prompt chunks + one per decoding sequence). */
  onIteration(numTokens: number): void;
  /** A sequence was admitted: tokens looked up in shared (prefix-cached) KV blocks and how many were found. */
  onPrefixCacheLookup(queriedTokens: number, hitTokens: number): void;
  /** `error`: the engine failed the request (a failed step); `abort`: the client or the server stopped it. */
  onRequestEnd(e2eS: number, completionTokens: number, reason: FinishReason | 'error', phases: RequestPhases): void;
}

export interface ServingOptions {
  scheduler: Omit<SchedulerConfig, 'maxModelLen'>;
  /** Requests that would wait (the running batch is full) beyond this many waiting are refused with 429. */
  maxQueuedRequests: number;
}

export interface RequestHandle {
  id: string;
  promptTokens: number;
  events: AsyncIterable<GenerationEvent>;
  /** Stops the request (client went away); frees its KV blocks. */
  abort(): void;
}

interface RequestState {
  seq: Sequence;
  queue: AsyncQueue<GenerationEvent>;
  detok: IncrementalDetokenizer;
  stops: StopStringMatcher;
  startS: number;
  /** When its first step was scheduled; null while it waits. */
  scheduledS: number | null;
  firstTokenS: number | null;
  lastTokenS: number | null;
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

  constructor(
    readonly engine: EngineLike,
    private readonly decoder: Decoder,
    private readonly options: ServingOptions,
    private observer: ServingObserver | null = null,
  ) {
    const { info } = engine;
    this.maxContextTokens = Math.min(info.maxModelLen, info.numKvBlocks * info.kvBlockSize);
    const blocks = new BlockManager(info.numKvBlocks, info.kvBlockSize);
    this.scheduler = new Scheduler({ ...options.scheduler, maxModelLen: this.maxContextTokens }, blocks);
  }

  /** Sets the metrics hooks. */
  observe(observer: ServingObserver): void {
    this.observer = observer;
  }

  /** Marks the rank unable (reason) or able (null) to serve; new requests get 503 meanwhile. */
  setNotReady(reason: string | null): void {
    this.notReadyReason = reason;
  }

  get readiness(): { ready: boolean; reason: string | null } {
    const reason = this.closed ? 'shutting down' : this.notReadyReason;
    return { ready: reason === null, reason };
  }

  get numActiveRequests(): number {
    return this.requests.size;
  }

  /** Checks a request against the context window; returns the effective max tokens. */
  checkLength(promptTokens: number, maxTokens: number | undefined): number {
    const limit = this.maxContextTokens;
    if (promptTokens === 0) throw new ServingError('invalid_request', 'the prompt is empty; send at least one token', 'prompt');
    if (promptTokens >= limit) {
      throw new ServingError(
        'context_length_exceeded',
        `This model's maximum context length is ${limit} tokens. However, your prompt has ${promptTokens} tokens, leaving no room for output. Shorten the prompt.`,
        'messages',
      );
    }
    if (maxTokens === undefined) return limit - promptTokens;
    if (promptTokens + maxTokens > limit) {
      throw new ServingError(
        'context_length_exceeded',
        `This model's maximum context length is ${limit} tokens. However, you requested ${promptTokens + maxTokens} tokens (${promptTokens} in the prompt, ${maxTokens} in the completion). Reduce the prompt or max_tokens.`,
        'max_tokens',
      );
    }
    return maxTokens;
  }

  /** Checks a request against the context window and the vocabulary; returns the effective max tokens. */
  checkRequest(params: GenerateParams): number {
    const maxTokens = this.checkLength(params.promptIds.length, params.maxTokens);
    const vocab = this.engine.info.vocabSize;
    const badId = params.promptIds.find((t) => !Number.isInteger(t) || t < 0 || t >= vocab);
    if (badId !== undefined) throw new ServingError('invalid_request', `token id ${badId} is outside the vocabulary [0, ${vocab})`, 'prompt');
    return maxTokens;
  }

  /** Queues a request; throws ServingError when it cannot be accepted. */
  submit(params: GenerateParams): RequestHandle {
    return this.submitAll([params])[0]!;
  }

  /**
   * Queues requests together, all or none: every one is checked, then the queue limit for
   * the whole batch, and only then are they added, one after another before the loop
   * schedules its next step. The scheduler thus admits them into the same step (as far as
   * max-num-seqs and the token budget allow), and they decode as one batch. Throws
   * ServingError when any of them cannot be accepted; then none is queued.
   */
  submitAll(batch: GenerateParams[]): RequestHandle[] {
    const { ready, reason } = this.readiness;
    if (!ready) throw new ServingError('not_ready', `the engine is not ready (${reason}); retry later`);
    const maxTokens = batch.map((params) => this.checkRequest(params));
    this.checkQueue(batch.length);
    const handles = batch.map((params, i) => this.add(params, maxTokens[i]!));
    void this.runLoop();
    return handles;
  }

  /**
   * Refuses (queue_full) `count` new requests when the last of them would wait beyond the
   * queue limit. Only a request that would have to wait (the running batch is full) counts
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

  /** Adds a checked request to the scheduler (the caller starts the loop). */
  private add(params: GenerateParams, maxTokens: number): RequestHandle {
    const id = `req-${this.nextId++}`;
    const sampling: SamplingParams = { ...params.sampling, seed: params.sampling.seed ?? randomInt(0, 2 ** 32) };
    const seq = new Sequence(
      id,
      params.promptIds,
      sampling,
      { maxTokens, eosTokenIds: this.engine.info.eosTokenIds, stopTokenIds: params.stopTokenIds ?? [], ignoreEos: params.ignoreEos ?? false },
      this.nextId,
    );
    const state: RequestState = {
      seq,
      queue: new AsyncQueue(),
      detok: new IncrementalDetokenizer(this.decoder, params.promptIds),
      stops: new StopStringMatcher(params.stop ?? []),
      startS: nowS(),
      scheduledS: null,
      firstTokenS: null,
      lastTokenS: null,
    };
    this.scheduler.add(seq);
    this.requests.set(id, state);
    this.observer?.onRequestStart(seq.promptIds.length, { n: 1, maxTokens });
    return { id, promptTokens: seq.promptIds.length, events: state.queue, abort: () => this.end(state, 'abort') };
  }

  /**
   * Aborts every request and stops scheduling; waits for the step in flight (at most
   * `maxWaitMs`, so a stuck peer cannot block shutdown). The caller closes the engine after.
   */
  async close(maxWaitMs = 10_000): Promise<void> {
    this.closed = true;
    for (const state of [...this.requests.values()]) this.end(state, 'abort');
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
        try {
          const result = await this.engine.step(step.plan);
          outputs = this.scheduler.update(step, result);
          this.observer?.onIteration(step.plan.tokenIds.length);
        } catch (err) {
          const error = new ServingError('engine_error', `engine step failed: ${(err as Error).message}`);
          const failed = this.scheduler.failStep(step);
          for (const seq of failed) this.fail(seq.id, error);
          continue;
        }
        for (const out of outputs) this.onToken(out);
        await yieldToEventLoop(); // let HTTP handlers run between steps
      }
    } finally {
      this.looping = false;
    }
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
    if (state.firstTokenS === null) {
      state.firstTokenS = t;
      this.observer?.onFirstToken(t - state.startS, t - (state.scheduledS ?? state.startS));
    } else this.observer?.onNextToken(t - (state.lastTokenS ?? t));
    state.lastTokenS = t;
    let text = '';
    let finish = out.finishReason;
    const match = state.stops.push(state.detok.push(out.tokenId));
    text += match.text;
    if (match.stopped) finish = 'stop';
    else if (finish) text += state.stops.push(state.detok.flush()).text + state.stops.flush();
    state.queue.push({ type: 'delta', text, tokenIds: [out.tokenId] });
    if (finish) this.end(state, finish);
  }

  private end(state: RequestState, reason: FinishReason): void {
    if (!this.requests.has(state.seq.id)) return;
    this.requests.delete(state.seq.id);
    this.scheduler.finish(state.seq, reason); // no-op when the scheduler already finished it
    const completionTokens = state.seq.outputIds.length;
    state.queue.push({ type: 'done', finishReason: reason, promptTokens: state.seq.promptIds.length, completionTokens });
    state.queue.end();
    this.observer?.onRequestEnd(nowS() - state.startS, completionTokens, reason, phasesOf(state));
  }

  private fail(id: string, error: ServingError): void {
    const state = this.requests.get(id);
    if (!state) return;
    this.requests.delete(id);
    state.queue.push({ type: 'error', error });
    state.queue.end();
    this.observer?.onRequestEnd(nowS() - state.startS, state.seq.outputIds.length, 'error', phasesOf(state));
  }
}

function phasesOf(s: RequestState): RequestPhases {
  if (s.firstTokenS === null || s.lastTokenS === null) return { decodeS: null, inferenceS: null };
  return { decodeS: s.lastTokenS - s.firstTokenS, inferenceS: s.lastTokenS - (s.scheduledS ?? s.startS) };
}
