/**
 * One request's token sequence as the scheduler sees it: prompt + generated ids, how many
 * of them are in the KV cache, and when to stop; with the logit processing and
 * log-probabilities it asks of the engine. Pure data.
 */
import { SeenTokens, type PlanSeq, type SamplingParams } from '@afd/shared';
import { BlockHashChain, rootHashOf } from '../kv/blockHash.js';
import type { TokenLogprob } from './logprobRows.js';

const NO_TOKENS: ReadonlyMap<number, number> = new Map();

/** parked: a prefill-only sequence whose prompt is all computed, holding its blocks until its KV is sent (prefill ranks). */
export type SeqStatus = 'waiting' | 'running' | 'parked' | 'finished';

/** Why a sequence ended (OpenAI finish_reason plus abort). */
export type FinishReason = 'stop' | 'length' | 'abort';

/** Token-level stop conditions (stop strings are handled by the output processor). */
export interface StopParams {
  /** Generate at most this many tokens. */
  maxTokens: number;
  /** Token ids that end generation (model EOS), unless ignoreEos. */
  eosTokenIds: readonly number[];
  /** Extra stop token ids from the request; always honoured. */
  stopTokenIds: readonly number[];
  /** Keep generating past EOS (benchmarks). */
  ignoreEos: boolean;
  /**
   * Generate at least this many tokens (vLLM min_tokens; default 0): until then every
   * token id that would end the sequence is banned (a -Infinity bias) and ends nothing.
   */
  minTokens?: number;
}

/** vLLM's penalties (0, 0, 1 = off). */
export interface Penalties {
  presence: number;
  frequency: number;
  repetition: number;
}

/** What a sequence asks of the engine beyond sampling; every field optional (off). */
export interface SeqLogitOptions {
  penalties?: Penalties;
  /** Additive logit biases by token id (OpenAI logit_bias). */
  logitBias?: ReadonlyMap<number, number>;
  /** Top log-probabilities of each sampled token (0..20). */
  logprobs?: number;
  /** Top log-probabilities of each prompt token (0..20). */
  promptLogprobs?: number;
  /**
   * Every sampled token obeys a grammar's allowed-token mask (structured outputs). Then the
   * model's EOS ends the output even with ignoreEos (the mask allows it only where the grammar
   * may end, and nothing can follow the grammar's end), and min tokens bans the stop ids
   * through the mask (while the grammar can go on) instead of a bias, so a stop id the
   * grammar forces always ends the sequence.
   */
  constrained?: boolean;
}

export class Sequence {
  status: SeqStatus = 'waiting';
  /** Tokens (prompt + output) whose KV entries are in the cache. */
  numComputedTokens = 0;
  readonly outputIds: number[] = [];
  finishReason: FinishReason | null = null;
  /** Times this sequence was preempted and recomputed. */
  numPreemptions = 0;
  /** Prompt log-probabilities received so far: entry j is that of prompt token j + 1. */
  readonly promptLogprobs: TokenLogprob[] = [];
  /** Prompt tokens whose KV came from the prefix cache (or a sibling) when first admitted; null before (usage's cached_tokens). */
  numCachedPromptTokens: number | null = null;
  /** Content hashes of its full blocks (prefix caching), made on first use. */
  private hashChain: BlockHashChain | null = null;
  private readonly stopIds: Set<number>;
  /**
   * The engine's penalty slot that counts this sequence's tokens on the device (null: none
   * yet, or no penalty on), and whether a step has written its seen list into it (a slot's
   * first step seeds it; later steps send nothing). The scheduler hands slots out.
   */
  penaltySlot: number | null = null;
  penaltySlotSeeded = false;
  /**
   * The engine's recurrent-state slot of this sequence (a model with linear-attention
   * layers: StepPlan.stateSlots), held from its admission to its end or preemption; null
   * while it holds none, or for a model without such layers. The scheduler hands slots out.
   */
  stateSlot: number | null = null;
  /**
   * A prefill rank's sequence (prefill/decode disaggregation): its prompt is computed and
   * nothing sampled; once all of it is in the cache the scheduler parks it, holding its
   * blocks (and state slot) until the caller has sent them and finishes it.
   */
  prefillOnly = false;
  /** logitBias plus a -Infinity bias on every stop id (while below min tokens). */
  private readonly minTokensBias: ReadonlyMap<number, number> | undefined;

  constructor(
    readonly id: string,
    readonly promptIds: readonly number[],
    readonly sampling: SamplingParams,
    readonly stop: StopParams,
    /** Monotonic admission order; larger is newer (the preemption victim). */
    readonly arrivalIndex: number,
    readonly logits: SeqLogitOptions = {},
    /** Its prefix-cache domain (vLLM's cache_salt): only sequences with the same salt share cached blocks. */
    readonly cacheSalt?: string,
  ) {
    if (promptIds.length === 0) throw new Error(`sequence ${id}: the prompt is empty; send at least one token`);
    this.stopIds = new Set([...(stop.ignoreEos && !logits.constrained ? [] : stop.eosTokenIds), ...stop.stopTokenIds]);
    if ((stop.minTokens ?? 0) > 0 && this.stopIds.size > 0 && !logits.constrained) {
      const banned = new Map(logits.logitBias ?? []);
      for (const t of this.stopIds) banned.set(t, -Infinity);
      this.minTokensBias = banned;
    }
  }

  /** Prompt + generated tokens. */
  get numTokens(): number {
    return this.promptIds.length + this.outputIds.length;
  }

  /** Token at absolute position `pos` (prompt first, then output). */
  tokenAt(pos: number): number {
    const n = this.promptIds.length;
    const t = pos < n ? this.promptIds[pos] : this.outputIds[pos - n];
    if (t === undefined) throw new Error(`sequence ${this.id}: no token at position ${pos} (has ${this.numTokens})`);
    return t;
  }

  /** The `count` tokens from absolute position `start` on. */
  tokensFrom(start: number, count: number): number[] {
    const out = new Array<number>(count);
    for (let k = 0; k < count; k++) out[k] = this.tokenAt(start + k);
    return out;
  }

  /**
   * The content hashes of its first `numBlocks` full blocks of `kvBlockSize` tokens (prompt,
   * then output); each is computed once. The array may hold more; do not mutate.
   */
  blockHashes(kvBlockSize: number, numBlocks: number): readonly string[] {
    if (numBlocks * kvBlockSize > this.numTokens) throw new Error(`sequence ${this.id}: ${numBlocks} blocks of ${kvBlockSize} need ${numBlocks * kvBlockSize} tokens, it has ${this.numTokens}`);
    this.hashChain ??= new BlockHashChain(rootHashOf(this.cacheSalt), kvBlockSize);
    return this.hashChain.upTo(numBlocks, (start, count) => this.tokensFrom(start, count));
  }

  /** Tokens not yet in the KV cache. 1 for a decoding sequence. */
  get numUncomputedTokens(): number {
    return this.numTokens - this.numComputedTokens;
  }

  /** True when the token id is one that ends generation (EOS unless ignored, or a stop id). */
  isStopToken(tokenId: number): boolean {
    return this.stopIds.has(tokenId);
  }

  /** The token ids that end generation. */
  get stopTokenIds(): number[] {
    return [...this.stopIds];
  }

  /** True while min tokens keeps the stop ids from ending it. */
  get belowMinTokens(): boolean {
    return this.outputIds.length < (this.stop.minTokens ?? 0);
  }

  /** Appends a sampled token (the engine's sampler has counted it into the penalty slot). */
  appendOutput(tokenId: number): void {
    this.outputIds.push(tokenId);
  }

  /** True when a penalty changes its logits (it then needs a penalty slot). */
  get penaltiesOn(): boolean {
    const p = this.logits.penalties;
    return p !== undefined && (p.presence !== 0 || p.frequency !== 0 || p.repetition !== 1);
  }

  /**
   * The distinct tokens it has seen with their output counts (prompt tokens count 0, listed
   * only with a repetition penalty): what seeds its penalty slot. O(tokens), once per slot.
   */
  seenTokens(): SeenTokens {
    const seen = new SeenTokens();
    if (this.logits.penalties?.repetition !== 1) for (const t of this.promptIds) if (!seen.has(t)) seen.set(t, 0);
    for (const t of this.outputIds) seen.set(t, (seen.get(t) ?? 0) + 1);
    return seen;
  }

  /** True when the last appended token ends the sequence by its id (never before min tokens, unless a grammar forced it). */
  stopsOnLastToken(): boolean {
    const last = this.outputIds[this.outputIds.length - 1];
    return last !== undefined && this.isStopToken(last) && (this.logits.constrained === true || this.outputIds.length >= (this.stop.minTokens ?? 0));
  }

  /**
   * This sequence's logit processing and log-probability requests for a step of `numNew`
   * tokens from numComputedTokens on (the fields of its PlanSeq besides tokens and blocks).
   */
  planFields(numNew: number, sample: boolean): Pick<PlanSeq, 'sampling' | 'penalties' | 'logitBias' | 'logprobs' | 'promptLogprobs' | 'nextPromptTokenId' | 'constrained' | 'stateSlot'> {
    const fields: ReturnType<Sequence['planFields']> = { sampling: this.sampling };
    if (this.stateSlot !== null) fields.stateSlot = this.stateSlot;
    const p = this.logits.penalties;
    if (this.penaltiesOn && p) {
      if (this.penaltySlot === null) throw new Error(`sequence ${this.id}: penalties are on but it holds no penalty slot (the scheduler gives one)`);
      const seed = !this.penaltySlotSeeded;
      fields.penalties = { ...p, seen: seed ? this.seenTokens() : NO_TOKENS, slot: { id: this.penaltySlot, seed } };
    }
    const belowMin = this.minTokensBias !== undefined && this.outputIds.length < (this.stop.minTokens ?? 0);
    const bias = belowMin ? this.minTokensBias : this.logits.logitBias;
    if (bias && bias.size > 0) fields.logitBias = bias;
    if (sample && this.logits.logprobs !== undefined) fields.logprobs = this.logits.logprobs;
    if (sample && this.logits.constrained) fields.constrained = true;
    if (this.needsPromptRows(numNew)) {
      fields.promptLogprobs = this.logits.promptLogprobs!;
      if (!sample) fields.nextPromptTokenId = this.tokenAt(this.numComputedTokens + numNew);
    }
    return fields;
  }

  /**
   * Adds the prompt rows of a step whose first token was at position `firstPos`: row j is
   * the log-probability of the token at firstPos + j + 1. Rows already received (a chunk
   * computed again after a preemption) and rows of output tokens are dropped.
   */
  addPromptLogprobs(rows: readonly TokenLogprob[], firstPos: number): void {
    rows.forEach((row, j) => {
      const pos = firstPos + j;
      if (pos === this.promptLogprobs.length && pos + 1 < this.promptIds.length) this.promptLogprobs.push(row);
    });
  }

  /** True when a chunk of `numNew` tokens from numComputedTokens on covers prompt rows not received yet. */
  private needsPromptRows(numNew: number): boolean {
    if (this.logits.promptLogprobs === undefined) return false;
    const have = this.promptLogprobs.length;
    return have < this.promptIds.length - 1 && this.numComputedTokens + numNew - 1 >= have;
  }

  get isFinished(): boolean {
    return this.status === 'finished';
  }
}
