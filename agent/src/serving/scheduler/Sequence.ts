/**
 * One request's token sequence as the scheduler sees it: prompt + generated ids, how many
 * of them are in the KV cache, and when to stop. Pure data.
 */
import type { SamplingParams } from '@afd/shared';

export type SeqStatus = 'waiting' | 'running' | 'finished';

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
}

export class Sequence {
  status: SeqStatus = 'waiting';
  /** Tokens (prompt + output) whose KV entries are in the cache. */
  numComputedTokens = 0;
  readonly outputIds: number[] = [];
  finishReason: FinishReason | null = null;
  /** Times this sequence was preempted and recomputed. */
  numPreemptions = 0;
  private readonly stopIds: Set<number>;

  constructor(
    readonly id: string,
    readonly promptIds: readonly number[],
    readonly sampling: SamplingParams,
    readonly stop: StopParams,
    /** Monotonic admission order; larger is newer (the preemption victim). */
    readonly arrivalIndex: number,
  ) {
    if (promptIds.length === 0) throw new Error(`sequence ${id}: the prompt is empty; send at least one token`);
    this.stopIds = new Set([...(stop.ignoreEos ? [] : stop.eosTokenIds), ...stop.stopTokenIds]);
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

  /** Tokens not yet in the KV cache. 1 for a decoding sequence. */
  get numUncomputedTokens(): number {
    return this.numTokens - this.numComputedTokens;
  }

  /** True when the token ends generation by id (EOS unless ignored, or a stop id). */
  isStopToken(tokenId: number): boolean {
    return this.stopIds.has(tokenId);
  }

  get isFinished(): boolean {
    return this.status === 'finished';
  }
}
