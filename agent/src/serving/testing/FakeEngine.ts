/**
 * A fake engine for unit tests of the serving layer (the engine boundary is the one thing
 * unit tests may fake). It checks every plan the way the real engine relies on it: offsets,
 * positions, block tables, and that every KV slot a sequence reads holds what the real
 * engine would have computed there for it (so a wrong block table fails loudly):
 *
 *   - each slot remembers the position it was written at and the hash of the writer's
 *     tokens up to that position (its history); a slot is valid for a reader at the same
 *     position whose history (the slots before it, through the reader's own table) is the
 *     same: the KV of a token depends on exactly those;
 *   - a reader's slots are its own (written with its seed), except for a prefix of whole
 *     blocks that another sequence wrote: the prompt blocks the n samples of a request
 *     share. Its own later slots extend that prefix's history, so from its second step on
 *     a wrong prefix breaks the chain; on its first step the engine cannot know the tokens
 *     before its first new one, which the tests check through `historyHash` below;
 *   - a block a sequence writes in a step is in no other sequence's table of that step;
 *   - its KV moves between fake engines like the real one's (kvTransfer: each slot's writer
 *     seed, position, token and history travel; an imported state slot matches any seed);
 *   - with numStateSlots > 0 (a model with linear-attention layers) every plan carries
 *     stateSlots, and a step that continues a sequence (first position p > 0) finds in its
 *     slot that sequence's state after exactly its first p tokens (same seed and history), as
 *     the recurrent layers need; a step from position 0 starts the slot afresh.
 *
 * Its model prefers the token `nextToken` picks (deterministic by default; `historyHash`, the
 * hash of every token of the context read through the block table, makes it depend on the
 * KV read) by a wide margin (fakeLogits.ts); it honours the plan's extras: logit bias,
 * penalties, temperature, top-k, top-p and min-p when it samples, and log-probability rows of
 * sampled and prompt tokens in the contract's layout, by the rules fakeLogits.ts spells out.
 * A sampled row with a mask row (maskRows) keeps only the tokens its mask allows; the mask
 * comes in the plan (tokenMask) or, deferred, through provideTokenMask (unless constructed
 * with deferredMasks: false, which leaves the engine without that method, as a real engine
 * that cannot wait for masks).
 */
import type { RankStats, StepExtras, StepPlan, StepResult } from '@afd/shared';
import { checkStepPlan, emptyRankStats } from '@afd/shared';
import type { EngineLike, EngineModelInfo, KvTransferEngine } from '../engineLike.js';
import { fakeKvTransfer } from './fakeKvTransfer.js';
import { fakeModelLogits, logprobRow, maskLogits, packLogprobRows, processLogits, sampleRow, type LogprobRow, type RowProcessing, type SparseLogits } from './fakeLogits.js';

/** What a fake sampler knows about a sequence it samples for. */
export interface NextTokenContext {
  lastTokenId: number;
  /** Context length (the sampled token's position). */
  position: number;
  seed: number;
  temperature: number;
  /** Hash of every token of the context as read through the block table (see the file comment). */
  historyHash: number;
}

export interface FakeEngineOptions extends Partial<EngineModelInfo> {
  /** The token the fake model prefers for a sequence; default cycles through `tokens`. */
  nextToken?: (ctx: NextTokenContext) => number;
  /** Token ids the default nextToken cycles through; also the model's runner-up candidates. */
  tokens?: number[];
  /** Simulated compute time per step in milliseconds. */
  stepDelayMs?: number;
  /** Offer provideTokenMask (default true); false: masks must come in the plan. */
  deferredMasks?: boolean;
}

/** Qwen3 ids of "Hello", " world", ",", " " and "世界". */
const DEFAULT_TOKENS = [9707, 1879, 11, 220, 99489];

/** The k of each sequence where the step samples it, else -1. */
function masked(ks: Int32Array, sampleMask: Uint8Array): number[] {
  return Array.from(ks, (k, i) => (sampleMask[i] ? k : -1));
}

/** History hash of an empty context. */
const HISTORY_START = 0x811c9dc5;

/** The history hash after `tokenId` at `position` (a 32-bit mix; collisions do not matter in tests). */
function nextHistory(history: number, tokenId: number, position: number): number {
  let x = Math.imul(history ^ tokenId, 0x9e3779b1) ^ position;
  x = Math.imul(x ^ (x >>> 15), 0x85ebca6b);
  return (x ^ (x >>> 13)) >>> 0;
}

export class FakeEngine implements EngineLike {
  readonly info: EngineModelInfo;
  steps = 0;
  plans: StepPlan[] = [];
  /** Makes the next step throw (tests engine failures). */
  failNext: Error | null = null;
  /** What problem() says: why the engine cannot step now (tests a lost FFN peer); null = it can. */
  unavailable: string | null = null;
  /** Steps that sampled under a token mask, and masked rows in all. */
  maskedSteps = 0;
  maskedRows = 0;
  /** Steps submitted with a deferred mask that provideTokenMask has not served yet, oldest first (as the real engine's tickets). */
  private readonly maskTickets: ((mask: Int32Array | null) => void)[] = [];
  readonly provideTokenMask?: (mask: Int32Array | null) => void;
  /** Per KV slot: the seed of the sequence that wrote it (-1: never written). */
  private readonly slotSeed: Float64Array;
  /** Per KV slot: the position it was written at (-1: never written). */
  private readonly slotPos: Int32Array;
  /** Per KV slot: the token written there. */
  private readonly slotToken: Int32Array;
  /** Per KV slot: the history hash of the writer's tokens 0..position. */
  private readonly slotHistory: Uint32Array;
  /** Penalty slots: each slot's seen tokens with their output counts (the engine's table). */
  private readonly penaltyTable = new Map<number, Map<number, number>>();
  /** Recurrent-state slots: the seed (NaN: imported, any), token count and history hash of the state each holds. */
  private readonly stateTable = new Map<number, { seed: number; numTokens: number; history: number }>();
  readonly kvTransfer: KvTransferEngine;

  constructor(private readonly opts: FakeEngineOptions = {}) {
    this.info = {
      vocabSize: opts.vocabSize ?? 151_936,
      eosTokenIds: opts.eosTokenIds ?? [151_645],
      maxModelLen: opts.maxModelLen ?? 4096,
      numKvBlocks: opts.numKvBlocks ?? 256,
      kvBlockSize: opts.kvBlockSize ?? 16,
      numStateSlots: opts.numStateSlots ?? 0,
    };
    const slots = this.info.numKvBlocks * this.info.kvBlockSize;
    this.slotSeed = new Float64Array(slots).fill(-1);
    this.slotPos = new Int32Array(slots).fill(-1);
    this.slotToken = new Int32Array(slots);
    this.slotHistory = new Uint32Array(slots);
    this.kvTransfer = fakeKvTransfer(this.info, { seed: this.slotSeed, pos: this.slotPos, token: this.slotToken, history: this.slotHistory }, this.stateTable);
    if (opts.deferredMasks ?? true) {
      this.provideTokenMask = (mask) => {
        const ticket = this.maskTickets.shift();
        if (!ticket) throw new Error('FakeEngine.provideTokenMask: no step waits for a token mask');
        ticket(mask);
      };
    }
  }

  /** The step's token mask: in the plan, or a ticket (taken when step() is called) that provideTokenMask serves. */
  private tokenMaskOf(plan: StepPlan): Promise<Int32Array | null> | Int32Array | undefined {
    const x = plan.extras;
    if (!x || !x.maskRows.some((r) => r >= 0)) return undefined;
    if (x.tokenMask) return x.tokenMask;
    if (!this.provideTokenMask) throw new Error('plan: the token mask is deferred, but this engine has no provideTokenMask');
    return new Promise((resolve) => this.maskTickets.push(resolve));
  }

  problem(): string | null {
    return this.unavailable;
  }

  async step(plan: StepPlan): Promise<StepResult> {
    const masking = this.tokenMaskOf(plan); // before any await: deferred masks pair with steps in call order
    if (this.opts.stepDelayMs) await new Promise((r) => setTimeout(r, this.opts.stepDelayMs));
    else await Promise.resolve();
    if (this.failNext) {
      const err = this.failNext;
      this.failNext = null;
      throw err;
    }
    this.steps++;
    this.plans.push(plan);
    if (this.plans.length > 64) this.plans.shift();
    const problems = checkStepPlan(plan, this.info);
    if (problems.length > 0) throw new Error(`plan: ${problems.join('; ')}`);
    const mask = await masking;
    if (mask === null) throw new Error('token mask withdrawn');
    const words = Math.ceil(this.info.vocabSize / 32);
    if (mask) this.maskedSteps++;
    const out = new Int32Array(plan.numSeqs);
    const sampledRows: LogprobRow[][] = [];
    const promptRows: LogprobRow[][] = [];
    const bs = this.info.kvBlockSize;
    this.checkWrittenBlocksAreExclusive(plan);
    this.seedPenaltySlots(plan);
    for (let i = 0; i < plan.numSeqs; i++) {
      const from = plan.tokenOffsets[i]!;
      const to = plan.tokenOffsets[i + 1]!;
      const seed = plan.seeds[i]!;
      const ctx = plan.contextLens[i]!;
      const table = plan.blockTables.subarray(i * plan.maxBlocksPerSeq, (i + 1) * plan.maxBlocksPerSeq);
      const slot = (pos: number): number => {
        const block = table[Math.floor(pos / bs)];
        if (block === undefined || block < 0 || block >= this.info.numKvBlocks) throw new Error(`plan: sequence ${i} has no valid block for position ${pos}`);
        return block * bs + (pos % bs);
      };
      const start = plan.positions[from]!;
      if (plan.positions[to - 1]! + 1 !== ctx) throw new Error(`plan: sequence ${i} ends at ${plan.positions[to - 1]} but contextLen is ${ctx}`);
      let history = this.readHistory(i, seed, start, slot);
      this.readState(plan, i, seed, start, history);
      const histories: number[] = []; // after each new token
      for (let t = from; t < to; t++) {
        const pos = plan.positions[t]!;
        if (pos !== start + (t - from)) throw new Error(`plan: positions of sequence ${i} are not consecutive`);
        history = nextHistory(history, plan.tokenIds[t]!, pos);
        histories.push(history);
        const s = slot(pos);
        this.slotSeed[s] = seed;
        this.slotPos[s] = pos;
        this.slotToken[s] = plan.tokenIds[t]!;
        this.slotHistory[s] = history;
      }
      if (plan.stateSlots) this.stateTable.set(plan.stateSlots[i]!, { seed, numTokens: ctx, history });
      const logitsAt = (t: number): SparseLogits =>
        this.logits({ lastTokenId: plan.tokenIds[t]!, position: plan.positions[t]! + 1, seed, temperature: plan.temperature[i]!, historyHash: histories[t - from]! });
      promptRows.push(this.promptRows(plan, i, logitsAt));
      sampledRows.push([]);
      if (!plan.sampleMask[i]) continue;
      const maskRow = plan.extras?.maskRows[i] ?? -1;
      let processed = processLogits(logitsAt(to - 1), this.processingOf(plan, i));
      if (mask && maskRow >= 0) {
        processed = maskLogits(processed, mask, maskRow * words);
        this.maskedRows++;
      }
      const sampling = { temperature: plan.temperature[i]!, topK: plan.topK[i]!, topP: plan.topP[i]!, minP: plan.minP[i]!, seed, position: ctx };
      out[i] = sampleRow(processed, sampling);
      this.countSampled(plan, i, out[i]!);
      const k = plan.extras?.numLogprobs[i] ?? -1;
      if (k >= 0) sampledRows[i]!.push(logprobRow(processed, out[i]!, k));
    }
    const result: StepResult = { tokenIds: out, stepTimeMs: this.opts.stepDelayMs ?? 0 };
    const x = plan.extras;
    if (x && x.numLogprobs.some((k, i) => k >= 0 && plan.sampleMask[i])) result.logprobs = packLogprobRows(sampledRows, masked(x.numLogprobs, plan.sampleMask));
    if (x && x.numPromptLogprobs.some((k) => k >= 0)) result.promptLogprobs = packLogprobRows(promptRows, Array.from(x.numPromptLogprobs));
    return result;
  }

  /** The fake model's raw logits for the token after a context. */
  private logits(ctx: NextTokenContext): SparseLogits {
    return fakeModelLogits(this.info.vocabSize, this.pick(ctx), this.opts.tokens ?? DEFAULT_TOKENS);
  }

  /** Sequence i's bias, penalties and temperature (StepExtras' CSR slices). */
  private processingOf(plan: StepPlan, i: number): RowProcessing {
    const p: RowProcessing = { bias: new Map(), presence: 0, frequency: 0, repetition: 1, seen: new Map(), temperature: plan.temperature[i]! };
    const x: StepExtras | undefined = plan.extras;
    if (!x) return p;
    const bias = new Map<number, number>();
    for (let j = x.biasOffsets[i]!; j < x.biasOffsets[i + 1]!; j++) bias.set(x.biasTokenIds[j]!, (bias.get(x.biasTokenIds[j]!) ?? 0) + x.biasValues[j]!);
    const slot = x.penaltySlots?.[i] ?? -1;
    const seen = new Map<number, number>(slot >= 0 ? this.penaltySlot(slot) : []);
    for (let j = x.seenOffsets[i]!; j < x.seenOffsets[i + 1]!; j++) seen.set(x.seenTokenIds[j]!, x.seenCounts[j]!);
    return { ...p, bias, seen, presence: x.presencePenalty[i]!, frequency: x.frequencyPenalty[i]!, repetition: x.repetitionPenalty[i]! };
  }

  /** The plan's seeded penalty slots get their sequence's seen list (the engine's table, StepExtras.penaltySlots). */
  private seedPenaltySlots(plan: StepPlan): void {
    const x = plan.extras;
    if (!x?.penaltySlots || !x.penaltySlotSeeds) return;
    for (let i = 0; i < plan.numSeqs; i++) {
      if (x.penaltySlots[i]! < 0 || x.penaltySlotSeeds[i] !== 1) continue;
      const seen = new Map<number, number>();
      for (let j = x.seenOffsets[i]!; j < x.seenOffsets[i + 1]!; j++) seen.set(x.seenTokenIds[j]!, x.seenCounts[j]!);
      this.penaltyTable.set(x.penaltySlots[i]!, seen);
    }
  }

  private penaltySlot(slot: number): Map<number, number> {
    const seen = this.penaltyTable.get(slot);
    if (!seen) throw new Error(`plan: a sequence reads penalty slot ${slot}, which no step seeded`);
    return seen;
  }

  /** The sampler counts sequence i's token into its penalty slot. */
  private countSampled(plan: StepPlan, i: number, tokenId: number): void {
    const slot = plan.extras?.penaltySlots?.[i] ?? -1;
    if (slot < 0) return;
    const seen = this.penaltySlot(slot);
    seen.set(tokenId, (seen.get(tokenId) ?? 0) + 1);
  }

  /** Prompt rows of sequence i: raw log-softmax of each token of the step whose next token is known. */
  private promptRows(plan: StepPlan, i: number, logitsAt: (t: number) => SparseLogits): LogprobRow[] {
    const k = plan.extras?.numPromptLogprobs[i] ?? -1;
    if (k < 0) return [];
    const from = plan.tokenOffsets[i]!;
    const to = plan.tokenOffsets[i + 1]!;
    const lastNext = plan.sampleMask[i] ? -1 : plan.extras!.nextPromptTokenIds[i]!;
    const rows: LogprobRow[] = [];
    for (let t = from; t < to; t++) {
      const next = t + 1 < to ? plan.tokenIds[t + 1]! : lastNext;
      if (next < 0) break;
      rows.push(logprobRow(logitsAt(t), next, k));
    }
    return rows;
  }

  /**
   * Checks the KV slots before `start` that sequence `i` reads (see the file comment);
   * returns the history hash of its tokens 0..start-1.
   */
  private readHistory(i: number, seed: number, start: number, slot: (pos: number) => number): number {
    let history = HISTORY_START;
    let numShared = 0; // leading positions another sequence wrote
    for (let p = 0; p < start; p++) {
      const s = slot(p);
      if (this.slotPos[s] !== p) throw new Error(`plan: sequence ${i} reads KV position ${p} that it never wrote (stale block table)`);
      history = nextHistory(history, this.slotToken[s]!, p);
      if (this.slotHistory[s] !== history) throw new Error(`plan: sequence ${i} reads KV position ${p} written after other tokens than it has before it (stale block table)`);
      if (this.slotSeed[s] === seed) continue;
      if (numShared !== p) throw new Error(`plan: sequence ${i} reads KV position ${p} written by another sequence after positions of its own (stale block table)`);
      numShared++;
    }
    const bs = this.info.kvBlockSize;
    if (numShared % bs !== 0) throw new Error(`plan: sequence ${i} reads another sequence's KV up to position ${numShared - 1}, inside a block: only whole blocks may be shared`);
    return history;
  }

  /**
   * Sequence i continuing at `start` > 0 must find its own state in its recurrent-state slot:
   * written by it (seed) after exactly `start` tokens with the history its KV holds.
   */
  private readState(plan: StepPlan, i: number, seed: number, start: number, history: number): void {
    if (!plan.stateSlots || start === 0) return;
    const slot = plan.stateSlots[i]!;
    const state = this.stateTable.get(slot);
    if (!state || (!Number.isNaN(state.seed) && state.seed !== seed) || state.numTokens !== start || state.history !== history) {
      const held = state ? `the state of seed ${state.seed} after ${state.numTokens} tokens` : 'no state';
      throw new Error(`plan: sequence ${i} continues at position ${start} from recurrent-state slot ${slot}, which holds ${held} (a continued sequence needs its own state after exactly its cached tokens)`);
    }
  }

  /** A block that a sequence writes in this step must be in no other sequence's table of the step. */
  private checkWrittenBlocksAreExclusive(plan: StepPlan): void {
    const bs = this.info.kvBlockSize;
    const users = new Map<number, number>();
    const written: { block: number; i: number }[] = [];
    for (let i = 0; i < plan.numSeqs; i++) {
      if (plan.tokenOffsets[i + 1]! <= plan.tokenOffsets[i]!) throw new Error(`plan: sequence ${i} has no tokens`);
      const table = plan.blockTables.subarray(i * plan.maxBlocksPerSeq, (i + 1) * plan.maxBlocksPerSeq);
      const firstWritten = Math.floor(plan.positions[plan.tokenOffsets[i]!]! / bs);
      for (let b = 0; b < Math.ceil(plan.contextLens[i]! / bs); b++) {
        users.set(table[b]!, (users.get(table[b]!) ?? 0) + 1);
        if (b >= firstWritten) written.push({ block: table[b]!, i });
      }
    }
    for (const { block, i } of written) if (users.get(block)! > 1) throw new Error(`plan: block ${block} is written by sequence ${i} and used by another sequence too`);
  }

  private pick(ctx: NextTokenContext): number {
    if (this.opts.nextToken) return this.opts.nextToken(ctx);
    const tokens = this.opts.tokens ?? DEFAULT_TOKENS;
    return tokens[(ctx.position + ctx.seed) % tokens.length]!;
  }

  stats(): RankStats {
    const s = emptyRankStats('colocated', 0, 2, 1);
    return { ...s, steps: this.steps };
  }

  async close(): Promise<void> {}
}

/**
 * A fake sampler whose token depends on everything in the KV cache it reads: greedy
 * (temperature 0) on the context's history alone, otherwise on the history and the seed.
 * A sequence that read a wrong KV slot samples other tokens than one that did not.
 */
export function historySampler(tokens: readonly number[]): (ctx: NextTokenContext) => number {
  return ({ historyHash, seed, temperature }) => {
    const key = temperature === 0 ? historyHash : nextHistory(historyHash, seed, -1);
    return tokens[key % tokens.length]!;
  };
}
